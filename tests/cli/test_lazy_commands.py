"""The command table ``--help`` lists is the commands themselves (issue 22).

Commands are imported only when they run, so ``--help`` shows the table in
:mod:`agentlog.infrastructure.cli.commands`; these tests keep it true.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from agentlog.infrastructure.cli import cli
from agentlog.infrastructure.cli.commands import COMMANDS


def test_the_table_is_every_command_with_its_module_and_summary() -> None:
    for entry in COMMANDS.values():
        importlib.import_module(entry.module)
    found = {}
    for name, command in cli.commands.items():
        assert command.callback is not None
        summary = (command.callback.__doc__ or "").strip().split("\n\n")[0]
        found[name] = (command.callback.__module__, " ".join(summary.split()))
    assert {
        name: (entry.module, entry.summary) for name, entry in COMMANDS.items()
    } == found


def test_a_command_resolves_from_the_group_by_name() -> None:
    context = click.Context(cli)
    assert cli.list_commands(context) == list(COMMANDS)
    command = cli.get_command(context, "ls")
    assert command is not None
    assert command.callback is not None
    assert cli.get_command(context, "no-such-command") is None


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
    assert "agentlog.infrastructure.cli.reads" not in loaded  # show's, not ls's
    assert "agentlog.infrastructure.cli.listing" in loaded
