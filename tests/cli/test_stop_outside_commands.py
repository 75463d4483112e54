"""A stop outside any command (click parsing the arguments, printing ``--help``,
its own steps after the command) is one line and exit 130.

In-process and deterministic: the stop is raised where a signal could land, as the
handler raises it; the real signals are in ``test_early_signals``. The process's
own signal handlers are left alone.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click
import pytest

from agentlog.infrastructure.cli import program
from agentlog.infrastructure.cli.interrupt import Interrupted

if TYPE_CHECKING:
    from collections.abc import Callable


pytestmark = pytest.mark.slow  # signals to agentlog processes


def raise_stop(signum: signal.Signals) -> Callable[..., NoReturn]:
    def stop(*args: Any, **kwargs: Any) -> NoReturn:
        raise Interrupted(signum)

    return stop


@pytest.fixture
def run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[object, str]]:
    monkeypatch.setattr(program, "install_stop_handlers", lambda: None)
    monkeypatch.setattr(program, "ignore_stop_signals", lambda: None)

    def run(*args: str) -> tuple[object, str]:
        monkeypatch.setattr(sys, "argv", ["agentlog", *args])
        with pytest.raises(SystemExit) as done:
            program.main()
        return done.value.code, capsys.readouterr().err

    return run


def test_a_stop_while_click_parses_the_arguments(
    run_main: Callable[..., tuple[object, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(click.Group, "parse_args", raise_stop(signal.SIGTERM))
    assert run_main("--help") == (130, "interrupted by SIGTERM\n")


def test_a_stop_while_help_is_printed(
    run_main: Callable[..., tuple[object, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(click.Group, "format_help", raise_stop(signal.SIGINT))
    assert run_main("--help") == (130, "interrupted by SIGINT\n")


def test_a_stop_after_the_command_returned(
    run_main: Callable[..., tuple[object, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Click closes the command's context after it returns; a stop there too."""
    monkeypatch.setattr(click.Context, "close", raise_stop(signal.SIGINT))
    assert run_main("--store", "memory:", "ls") == (130, "interrupted by SIGINT\n")


def test_a_stopped_command_still_prints_its_line_once(
    run_main: Callable[..., tuple[object, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(click.Group, "invoke", raise_stop(signal.SIGINT))
    assert run_main("--store", "memory:", "ls") == (130, "interrupted by SIGINT\n")
