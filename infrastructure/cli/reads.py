"""The read commands: listing, one session, its messages, surface, events, traces.

Each reads through :class:`~agentlog.application.query.SessionQuery` (``messages``
through
:meth:`Sessions.messages`); reading never writes. ``--json`` prints the read's
model with the spec's field names; otherwise :mod:`~agentlog.infrastructure.cli.render`
draws it.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer

from agentlog.application.query import DEFAULT_READ_WINDOW_MAX, SessionQuery
from agentlog.infrastructure.cli.program import (
    SEQ_MAX,
    JsonFlag,
    Seq,
    SessionId,
    cli,
    emit_json,
    emit_json_stream,
    fail,
    opened,
    out,
    say,
)
from agentlog.infrastructure.cli.render import (
    event_trace_view,
    events_table,
    header_view,
    lineage_view,
    messages_view,
    replacement_notes,
    summaries_table,
    window_view,
)
from agentlog.infrastructure.cli.terminal import mask_secrets

READ = "Read"
LIMIT_MAX = 10_000
"""The most rows one listing page holds; more pages follow with ``--cursor``."""
WINDOW_MAX = DEFAULT_READ_WINDOW_MAX
AtOption = Annotated[
    int | None,
    typer.Option(
        "--at",
        min=0,
        max=SEQ_MAX,
        metavar="SEQ",
        help="As it was right after the event with this seq.",
    ),
]


def neighbours_option(flag: str, side: str) -> Any:
    """``--before``/``--after``: how many raw events to show on that side."""
    return typer.Option(
        flag,
        metavar="N",
        min=0,
        max=WINDOW_MAX,
        help=f"Events {side} it (0 to {WINDOW_MAX}).",
    )


def next_page_command(ctx: typer.Context, limit: int, cursor: str) -> str:
    """The command that prints the next page, run as printed: the same store
    (when one was named; a password in it is masked) and the same page size."""
    words = ["agentlog"]
    store = ctx.parent.params.get("store") if ctx.parent is not None else None
    if store:
        words += ["--store", mask_secrets(store)]
    words += [*ctx.command_path.split()[1:], "--limit", str(limit), "--cursor", cursor]
    return shlex.join(words)


@cli.command("ls", rich_help_panel=READ)
def list_command(
    ctx: typer.Context,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=1,
            max=LIMIT_MAX,
            help=f"Rows per page (1 to {LIMIT_MAX}; --cursor pages on).",
        ),
    ] = 50,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="The nextCursor of a previous page.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List sessions, newest first."""
    with opened(ctx) as app:
        try:
            page = SessionQuery(app).list_summaries(limit, cursor=cursor)
        except ValueError as error:
            raise fail(str(error)) from None
    if as_json:
        emit_json(page.to_json())
        return
    if not page.items:
        out.print("no sessions yet; try: agentlog demo")
        return
    out.print(summaries_table(page.items, "Sessions"))
    if page.next_cursor:
        say(
            out, f"more: {next_page_command(ctx, limit, page.next_cursor)}", style="dim"
        )


@cli.command(rich_help_panel=READ)
def show(ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False) -> None:
    """A session's header, title and every event with its surface class."""
    with opened(ctx) as app:
        query = SessionQuery(app)
        records = query.list_events(session_id)
        header = app.header(session_id)
        title = query.read_title(session_id)
        events = [] if as_json else app.read_events(session_id)
    if as_json:
        emit_json(
            {
                "session": header,
                "title": None if title is None else title.to_json(),
                "events": [record.to_json() for record in records],
            }
        )
        return
    classes = {record.seq: record.surface for record in records}
    notes = replacement_notes(events)
    out.print(header_view(header, title))
    out.print(events_table(f"{len(events)} events", events, classes, notes=notes))


@cli.command(rich_help_panel=READ)
def messages(
    ctx: typer.Context,
    session_id: SessionId,
    last: Annotated[
        int | None,
        typer.Option(
            "--last", min=0, max=SEQ_MAX, metavar="N", help="Only the last N."
        ),
    ] = None,
    at: AtOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The derived LLM message history (what the model sees next, or saw --at SEQ)."""
    with opened(ctx) as app:
        derived = app.messages(session_id, last=last, at=at)
    if as_json:
        emit_json(derived)
    else:
        out.print(messages_view(derived))


@cli.command(rich_help_panel=READ)
def surface(
    ctx: typer.Context,
    session_id: SessionId,
    at: AtOption = None,
    as_json: JsonFlag = False,
) -> None:
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


@cli.command(rich_help_panel=READ)
def event(
    ctx: typer.Context,
    session_id: SessionId,
    seq: Seq,
    before: Annotated[int, neighbours_option("--before", "before")] = 0,
    after: Annotated[int, neighbours_option("--after", "after")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """One event in full, with up to N raw events (at most 50) on each side."""
    with opened(ctx) as app:
        window = SessionQuery(app).read_event(session_id, seq, before, after)
    if as_json:
        emit_json(window.to_json())
    else:
        out.print(window_view(window))


@cli.command(rich_help_panel=READ)
def trace(ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False) -> None:
    """A session's lineage: its ancestors and the sessions forked from it."""
    with opened(ctx) as app:
        lineage = SessionQuery(app).trace_session(session_id)
    if as_json:
        emit_json(lineage.to_json())
    else:
        out.print(lineage_view(lineage))


@cli.command("trace-event", rich_help_panel=READ)
def trace_event(
    ctx: typer.Context, session_id: SessionId, seq: Seq, as_json: JsonFlag = False
) -> None:
    """Where an event went: what replaced it, what it replaced, its provenance."""
    with opened(ctx) as app:
        traced = SessionQuery(app).trace_event(session_id, seq)
    if as_json:
        emit_json(traced.to_json())
    else:
        out.print(event_trace_view(traced))
