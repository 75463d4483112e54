"""The ``migrate`` command: create a store's tables once, before a service starts.

A service that opens ``Sessions(create_tables=False)`` never runs DDL at startup;
this command creates the event, snapshot and view tables (under the advisory
lock, so it is safe beside running services) and says what exists.
"""

from __future__ import annotations

import typer  # noqa: TC002 - typer reads the annotation at runtime

from agentlog.infrastructure.cli.program import (
    cli,
    make_console,
    reported,
    say,
    state_of,
)
from agentlog.infrastructure.store import migrate as migrate_store
from agentlog.infrastructure.store_url import parse_store_url


@cli.command(rich_help_panel="Store")
def migrate(ctx: typer.Context) -> None:
    """Create the store's tables and views (for services with create_tables=False)."""
    url = state_of(ctx).store_url
    with reported():
        display = parse_store_url(url).display
        created = migrate_store(url)
    say(make_console(), f"{display}: {', '.join(created)} ready")
