"""The ``rotate-master-key`` command: wrap every session key with a new master key.

Both keys come from the environment (``AGENTLOG_MASTER_KEY``, the current one, and
``AGENTLOG_NEW_MASTER_KEY``), never from the command line, where a shell's history
and the process list would keep them. See docs/encryption.md.
"""

from __future__ import annotations

import os

import click

from agentlog.infrastructure.cli.console import make_console, say
from agentlog.infrastructure.cli.program import cli, reported, state_of


@cli.command("rotate-master-key")
@click.pass_context
def rotate_master_key(ctx: click.Context) -> None:
    """Wrap every session key with AGENTLOG_NEW_MASTER_KEY (docs/encryption.md)."""
    from agentlog.infrastructure.key_store_setup import rotate_master_key as rotate

    with reported():
        count, display = rotate(state_of(ctx).store_url, os.environ)
    say(
        make_console(),
        f"{display}: {count} session key(s) now wrapped by the new master key; "
        "restart every process with it as AGENTLOG_MASTER_KEY",
    )
