"""The ``demo`` command: run the scripted session, then show what was stored.

The script itself is :mod:`~agentlog.infrastructure.cli.demo.script` (it uses only
the Python API); this module prints its story and then four reads of the result —
the derived messages, the surface with its marks, the listing and the lineage tree.
"""

from __future__ import annotations

from shlex import quote
from typing import TYPE_CHECKING

import click
from rich.text import Text

from agentlog.infrastructure.cli.console import out, say
from agentlog.infrastructure.cli.program import cli, reported, state_of
from agentlog.infrastructure.cli.render import (
    events_table,
    lineage_view,
    messages_view,
    replacement_notes,
    summaries_table,
)
from agentlog.infrastructure.store import DEFAULT_STORE_URL, parse_store_url

if TYPE_CHECKING:
    from agentlog.infrastructure.cli.demo.script import DemoResult
    from agentlog.infrastructure.cli.program import CliState


@cli.command()
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Run a scripted agent session end to end, then show what was stored."""
    from agentlog.infrastructure.cli.demo.script import run_demo

    state = state_of(ctx)
    display = parse_store_url(state.store_url).display
    out.print(f"agentlog demo · store {display}", style="bold")

    def narrate(line: str) -> None:
        out.print(Text("✓ ", style="green") + Text(line), soft_wrap=True)

    with reported():
        result = run_demo(state.store_url, narrate)
        try:
            _show_demo(result, state)
        finally:
            result.app.close()


def _show_demo(result: DemoResult, state: CliState) -> None:
    app, query = result.app, result.query
    session_id, fork_id = result.session_id, result.fork_id
    out.print()
    out.print(f"Derived message history of {session_id}", style="bold underline")
    out.print(messages_view(app.messages(session_id)))
    out.print()
    events = app.read_events(session_id)
    classes = {r.seq: r.surface for r in query.list_events(session_id)}
    notes = replacement_notes(events)
    surface_events = [e for e in events if "surfaceOp" in e]
    log_only = len(events) - len(surface_events)
    out.print(
        events_table(
            f"Surface of {session_id}: {len(surface_events)} message events, "
            f"current and shadowed ({log_only} log-only events not shown)",
            surface_events,
            classes,
            notes=notes,
        )
    )
    page = query.list_summaries(limit=50)
    # Only this run's sessions, parent first, so repeated runs print the same.
    mine = [row for row in page.items if row.id in {session_id, fork_id}]
    mine.sort(key=lambda row: row.id != session_id)
    out.print(summaries_table(mine, "Listing (this demo's sessions)"))
    out.print("Lineage", style="bold underline")
    out.print(lineage_view(query.trace_session(session_id)))
    out.print()
    config = parse_store_url(state.store_url)
    if config.env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        say(out, "The memory: store is gone when this process exits.", style="dim")
        say(
            out, "Run `agentlog demo` without --store to keep the sessions and explore."
        )
        return
    # The display form hides a password; quoted, because URLs hold ? and &.
    store = (
        "" if config.url == DEFAULT_STORE_URL else f" --store {quote(config.display)}"
    )
    out.print("Try next:", style="bold")
    for command in (
        f"agentlog{store} ls",
        f"agentlog{store} show {session_id}",
        f"agentlog{store} trace-event {session_id} {result.checkpoint_seq}",
        f"agentlog{store} messages {fork_id}",
    ):
        say(out, f"  {command}")
