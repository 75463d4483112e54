"""The ``migrate`` command: create a store's tables once, before a service starts.

A service that opens ``Sessions(create_tables=False)`` never runs DDL at startup;
this command creates the event, snapshot and view tables (under the advisory
lock, so it is safe beside running services) and says what exists. With
``--rebuild-views`` it also folds the whole log into fresh views.
"""

from __future__ import annotations

import click

from agentlog.infrastructure.cli.console import make_console, say
from agentlog.infrastructure.cli.program import cli, reported, state_of
from agentlog.infrastructure.store import migrate as migrate_store
from agentlog.infrastructure.store import rebuild_views as rebuild_store_views
from agentlog.infrastructure.store_url import parse_store_url


@cli.command()
@click.option(
    "--rebuild-views",
    is_flag=True,
    help="Also drop every view and the search index and fold the whole log "
    "again (readers see partial views until it ends).",
)
@click.pass_context
def migrate(ctx: click.Context, rebuild_views: bool) -> None:
    """Create the store's tables and views (for services with create_tables=False)."""
    url = state_of(ctx).store_url
    console = make_console()
    with reported():
        display = parse_store_url(url).display
        created = migrate_store(url)
        say(console, f"{display}: {', '.join(created)} ready")
        if rebuild_views:
            read = rebuild_store_views(url)
            say(console, f"{display}: views rebuilt from {read} notifications")
