"""The progress meter: shown on a terminal once a command is slow, silent otherwise."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.progress import TimeRemainingColumn, TransferSpeedColumn

from agentlog.infrastructure.cli import progress
from agentlog.infrastructure.cli.progress import Meter, counted


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress.time, "monotonic", fake)
    return fake


def console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, force_terminal=terminal, width=100), sink


def test_a_slow_pass_on_a_terminal_shows_bytes_rate_and_time_left(clock: Clock) -> None:
    terminal, sink = console(terminal=True)
    with Meter(terminal) as meter:
        meter.phase("storing big.jsonl", 4_000_000)
        meter.advance(1_000_000)
        assert meter.progress is None  # quick so far: nothing shown
        clock.now += 2
        meter.advance(1_000_000)
        assert meter.progress is not None
        meter.progress.refresh()
        columns = meter.progress.columns
        shown = sink.getvalue()
    assert "storing big.jsonl" in shown
    assert "2.0/4.0 MB" in shown
    kinds = {type(column) for column in columns}
    assert {TransferSpeedColumn, TimeRemainingColumn} <= kinds


def test_a_quick_command_prints_nothing(clock: Clock) -> None:
    terminal, sink = console(terminal=True)
    with Meter(terminal) as meter:
        meter.phase("checking x", 10)
        meter.advance(10)
    assert sink.getvalue() == ""


def test_nothing_is_shown_when_stderr_is_not_a_terminal(clock: Clock) -> None:
    piped, sink = console(terminal=False)
    with Meter(piped, unit="events") as meter:
        meter.phase("exporting s", 1_000)
        clock.now += 5
        assert list(counted(range(1_000), meter)) == list(range(1_000))
    assert meter.done == 1_000
    assert meter.progress is None
    assert sink.getvalue() == ""


def test_an_event_meter_counts_events_per_second(clock: Clock) -> None:
    terminal, sink = console(terminal=True)
    with Meter(terminal, unit="events") as meter:
        meter.phase("exporting s", 1_000)
        clock.now += 2
        for _ in counted(range(500), meter):
            pass
        assert meter.progress is not None
        meter.progress.refresh()
        shown = sink.getvalue()
    assert "500/1000" in shown
    assert " events/s" in shown
