"""The read commands: one session, its messages, surface, events, traces.

Each reads through :class:`~agentlog.application.query.SessionQuery` (``messages``
through
:meth:`Sessions.messages`); reading never writes. ``--json`` prints the read's
model with the spec's field names; otherwise :mod:`~agentlog.infrastructure.cli.render`
draws it. The listing (``ls``) is :mod:`~agentlog.infrastructure.cli.listing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

import click

from agentlog.application.query import DEFAULT_READ_WINDOW_MAX, SessionQuery
from agentlog.application.query_models import SurfaceClass
from agentlog.infrastructure.cli.console import out, say
from agentlog.infrastructure.cli.listing import LIMIT_MAX, next_page_command
from agentlog.infrastructure.cli.program import (
    SEQ_MAX,
    cli,
    emit_json,
    emit_json_stream,
    json_option,
    opened,
    seq_argument,
    session_id_argument,
)
from agentlog.infrastructure.cli.render import (
    CHUNK,
    ChunkRun,
    event_trace_view,
    events_table,
    fold_chunks,
    header_view,
    lineage_view,
    messages_view,
    replacement_notes,
    window_view,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.domain.json import Json

SHOW_PAGE = 500
"""The rows ``show`` prints before its more: line (a run of chunks is one row)."""
SURFACES = get_args(SurfaceClass)
WINDOW_MAX = DEFAULT_READ_WINDOW_MAX
at_option = click.option(
    "--at",
    type=click.IntRange(0, SEQ_MAX),
    metavar="SEQ",
    help="As it was right after the event with this seq.",
)


def neighbours_option(flag: str, side: str) -> Callable[[Any], Any]:
    """``--before``/``--after``: how many raw events to show on that side."""
    return click.option(
        flag,
        type=click.IntRange(0, WINDOW_MAX),
        default=0,
        metavar="N",
        show_default=True,
        help=f"Events {side} it (0 to {WINDOW_MAX}).",
    )


@cli.command()
@session_id_argument
@click.option(
    "--type", "types", multiple=True, metavar="T", help="Only events of type T."
)
@click.option(
    "--surface",
    "surfaces",
    multiple=True,
    type=click.Choice(SURFACES),
    help="Only current, shadowed or log-only events.",
)
@click.option(
    "--chunks",
    is_flag=True,
    help="A row per assistant/chunk (by default a run of them is one row).",
)
@click.option(
    "--from",
    "start",
    type=click.IntRange(0, SEQ_MAX),
    default=0,
    metavar="SEQ",
    help="Start at this seq (the more: line's next page).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, LIMIT_MAX),
    metavar="N",
    help=f"Rows per page (default {SHOW_PAGE}; --json: every event unless given).",
)
@json_option
@click.pass_context
def show(
    ctx: click.Context,
    session_id: str,
    types: tuple[str, ...],
    surfaces: tuple[str, ...],
    chunks: bool,
    start: int,
    limit: int | None,
    as_json: bool,
) -> None:
    """A session's header, title and every event with its surface class."""
    with opened(ctx) as app:
        query = SessionQuery(app)
        records = query.list_events(session_id)
        header = app.header(session_id)
        title = query.read_title(session_id)
        events = [] if as_json else app.read_events(session_id)
    chosen = [
        record
        for record in records
        if record.seq >= start
        and (not types or record.type in types)
        and (not surfaces or record.surface in surfaces)
    ]
    if as_json:
        page = chosen if limit is None else chosen[:limit]
        shown: dict[str, Json] = {
            "session": header,
            "title": None if title is None else title.to_json(),
            "events": [record.to_json() for record in page],
        }
        if len(page) < len(chosen):
            shown["nextFrom"] = chosen[len(page)].seq
        emit_json(shown)
        return
    classes = {record.seq: record.surface for record in records}
    notes = replacement_notes(events)
    wanted = {record.seq for record in chosen}
    selected = [event for event in events if event.get("seq") in wanted]
    each_chunk = chunks or CHUNK in types
    rows = list(selected) if each_chunk else fold_chunks(selected)
    page_rows = rows[: limit or SHOW_PAGE]
    out.print(header_view(header, title))
    heading = f"{len(events)} events"
    if len(selected) < len(events):
        heading = f"{len(selected)} of {len(events)} events"
    out.print(events_table(heading, page_rows, classes, notes=notes))
    if len(page_rows) < len(rows):
        following = rows[len(page_rows)]
        next_seq = (
            following.first_seq
            if isinstance(following, ChunkRun)
            else following.get("seq")
        )
        options = [f"--type={name}" for name in types]
        options += [f"--surface={name}" for name in surfaces]
        options += ["--chunks"] if chunks else []
        options += ["--limit", str(limit)] if limit is not None else []
        hint = next_page_command(ctx, session_id, *options, "--from", str(next_seq))
        say(out, f"more: {hint}", style="dim")


@cli.command()
@session_id_argument
@click.option(
    "--last", type=click.IntRange(0, SEQ_MAX), metavar="N", help="Only the last N."
)
@at_option
@json_option
@click.pass_context
def messages(
    ctx: click.Context,
    session_id: str,
    last: int | None,
    at: int | None,
    as_json: bool,
) -> None:
    """The derived LLM message history (what the model sees next, or saw --at SEQ)."""
    with opened(ctx) as app:
        derived = app.messages(session_id, last=last, at=at)
    if as_json:
        emit_json(derived)
    else:
        out.print(messages_view(derived))


@cli.command()
@session_id_argument
@at_option
@json_option
@click.pass_context
def surface(ctx: click.Context, session_id: str, at: int | None, as_json: bool) -> None:
    """The current surface events (or as of --at SEQ), in model-history order."""
    if as_json:
        with opened(ctx) as app:
            stream = SessionQuery(app).stream_surface(session_id, at=at)
            head = {
                "session": stream.session,
                "capturedThroughSeq": stream.captured_through_seq,
            }
            emit_json_stream(head, "events", stream.events)
        return
    with opened(ctx) as app:
        snapshot = SessionQuery(app).read_surface(session_id, at=at)
    through = snapshot.captured_through_seq
    title = f"surface of {session_id} · {len(snapshot.events)} events"
    title += f" · captured through seq {through}" if through is not None else ""
    out.print(events_table(title, snapshot.events))


@cli.command()
@session_id_argument
@seq_argument
@neighbours_option("--before", "before")
@neighbours_option("--after", "after")
@json_option
@click.pass_context
def event(
    ctx: click.Context,
    session_id: str,
    seq: int,
    before: int,
    after: int,
    as_json: bool,
) -> None:
    """One event in full, with up to N raw events (at most 50) on each side."""
    with opened(ctx) as app:
        window = SessionQuery(app).read_event(session_id, seq, before, after)
    if as_json:
        emit_json(window.to_json())
    else:
        out.print(window_view(window))


@cli.command()
@session_id_argument
@json_option
@click.pass_context
def trace(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """A session's lineage: its ancestors and the sessions forked from it."""
    with opened(ctx) as app:
        lineage = SessionQuery(app).trace_session(session_id)
    if as_json:
        emit_json(lineage.to_json())
    else:
        out.print(lineage_view(lineage))


@cli.command("trace-event")
@session_id_argument
@seq_argument
@json_option
@click.pass_context
def trace_event(ctx: click.Context, session_id: str, seq: int, as_json: bool) -> None:
    """Where an event went: what replaced it, what it replaced, its provenance."""
    with opened(ctx) as app:
        traced = SessionQuery(app).trace_event(session_id, seq)
    if as_json:
        emit_json(traced.to_json())
    else:
        out.print(event_trace_view(traced))
