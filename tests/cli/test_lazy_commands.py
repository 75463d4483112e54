"""The command table ``--help`` lists is the commands themselves (issue 22).

Commands are imported only when they run, so ``--help`` shows the table in
:mod:`agentlog.infrastructure.cli.commands`; these tests keep it true.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import typer
from typer.main import get_command_name

from agentlog.infrastructure.cli import cli
from agentlog.infrastructure.cli.commands import COMMANDS


def test_the_table_is_every_command_with_its_panel_and_summary() -> None:
    for entry in COMMANDS.values():
        importlib.import_module(entry.module)
    found = {}
    for info in cli.registered_commands:
        assert info.callback is not None
        name = info.name or get_command_name(info.callback.__name__)
        summary = (info.callback.__doc__ or "").strip().split("\n\n")[0]
        found[name] = (
            info.callback.__module__,
            info.rich_help_panel,
            " ".join(summary.split()),
        )
    assert {name: tuple(entry) for name, entry in COMMANDS.items()} == found


def test_a_command_resolves_from_the_group_by_name() -> None:
    group = typer.main.get_command(cli)
    assert isinstance(group, typer.core.TyperGroup)
    context = typer.Context(group)
    assert group.list_commands(context) == list(COMMANDS)
    command = group.get_command(context, "ls")
    assert command is not None
    assert command.callback is not None
    assert group.get_command(context, "no-such-command") is None


@pytest.mark.slow
def test_help_and_ls_import_no_command_they_do_not_run() -> None:
    code = (
        "import sys\n"
        "from agentlog.infrastructure.cli import main\n"
        "sys.argv = ['agentlog', '--store', 'memory:', 'ls']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('mcp', 'agentlog.infrastructure.cli.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert "'mcp'" not in loaded
    assert "agentlog.infrastructure.cli.mcp" not in loaded
    assert "agentlog.infrastructure.cli.serve" not in loaded
    assert "agentlog.infrastructure.cli.demo" not in loaded
    assert "agentlog.infrastructure.cli.reads" in loaded
