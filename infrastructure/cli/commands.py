"""The ``agentlog`` commands: one process, one store, one read or write.

Each command opens the store named by ``--store`` (or ``AGENTLOG_STORE``, or
``sqlite:///agentlog.db`` in the current directory), runs one use case of
:class:`~application.sessions.Sessions` or :class:`~application.query.SessionQuery`
and closes the store. Exit codes are a contract for scripts: 0 success, 1 a domain,
query or store error (one line on stderr, never a traceback), 2 a usage error.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path  # noqa: TC003 - typer reads the annotations at runtime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from eventsourcing.persistence import PersistenceError as RecorderError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from application.query import SessionQuery
from domain.errors import AgentlogError
from domain.json import dumps
from domain.surface import fold_surface
from infrastructure.cli import render
from infrastructure.jsonl import export_session, import_log
from infrastructure.store import (
    DEFAULT_STORE_URL,
    STORE_ENV_VAR,
    open_sessions,
    parse_store_url,
    store_url_from_environment,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from application.sessions import Sessions
    from domain.json import Envelope, Json
    from infrastructure.demo import DemoResult

EXIT_ERROR = 1
_BREAKS = re.compile(r"\s*\n\s*")

cli = typer.Typer(
    name="agentlog",
    help="An event-sourced store for AI-agent sessions. Start with: agentlog demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
PIPE_WIDTH = 160
"""Columns for a file or pipe (rich would assume 80), unless COLUMNS is set."""


def make_console(*, stderr: bool = False) -> Console:
    """A console that never reads markup from data, wide when not a terminal."""
    console = Console(stderr=stderr, markup=False, emoji=False, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
    return console


out = make_console()
err = make_console(stderr=True)

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Machine output: JSON with the spec's keys.")
]
SessionId = Annotated[str, typer.Argument(metavar="ID", help="A session id.")]
Seq = Annotated[int, typer.Argument(metavar="SEQ", help="An event's seq.")]


@dataclass(frozen=True)
class CliState:
    """What the global options decided, passed to every command."""

    store_url: str


# ----------------------------------------------------------------- plumbing


def _store_errors() -> tuple[type[BaseException], ...]:
    """Errors a database raises when it is unreachable or refuses a connection."""
    errors: list[type[BaseException]] = [RecorderError, sqlite3.Error]
    with contextlib.suppress(ImportError):
        import psycopg

        errors.append(psycopg.Error)
    return tuple(errors)


def one_line(text: str) -> str:
    """Line breaks (a driver's multi-line error, say) become single spaces."""
    return _BREAKS.sub(" ", text).rstrip()


def fail(message: str) -> typer.Exit:
    """Print one line on stderr; the caller raises the returned exit."""
    sys.stderr.write(one_line(message.strip()) + "\n")
    return typer.Exit(EXIT_ERROR)


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Turn a domain, query, store or file error into one line and exit 1."""
    try:
        yield
    except AgentlogError as error:
        raise fail(str(error)) from None
    except _store_errors() as error:
        raise fail(f"store error: {error}") from None
    except OSError as error:
        raise fail(str(error)) from None


@contextlib.contextmanager
def opened(ctx: typer.Context) -> Iterator[Sessions]:
    """The store of ``--store``, open for one command and closed after it."""
    state = ctx.find_object(CliState)
    assert state is not None
    with reported():
        app = open_sessions(state.store_url)
        try:
            yield app
        finally:
            app.close()


def say(console: Console, line: str, style: str | None = None) -> None:
    """One line, never wrapped: scripts read it."""
    console.print(one_line(line), style=style, soft_wrap=True)


def emit_json(value: Json) -> None:
    """Compact, lossless JSON on stdout (any depth, any integer size)."""
    data = dumps(value).lstrip(b" ") + b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


# ------------------------------------------------------------------ global


@cli.callback()
def configure(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help=(
                "memory:, sqlite:///path.db or "
                "postgresql://user:password@host:port/db?schema=name "
                f"(env {STORE_ENV_VAR}; default {DEFAULT_STORE_URL})"
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    """Pick the store every command uses."""
    url = store_url_from_environment(store)
    with reported():
        parse_store_url(url)
    ctx.obj = CliState(url)


# ------------------------------------------------------------------- demo


@cli.command()
def demo(ctx: typer.Context) -> None:
    """Run a scripted agent session end to end, then show what was stored."""
    from infrastructure.demo import run_demo

    state = ctx.find_object(CliState)
    assert state is not None
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


def replacement_notes(events: Sequence[Envelope]) -> dict[int, str]:
    """``replaced by N`` for every shadowed event (the log is already validated)."""
    return {
        seq: f"replaced by {replacement.seq}"
        for replacement in fold_surface(events).replacements
        for seq in replacement.shadowed_seqs
    }


def _show_demo(result: DemoResult, state: CliState) -> None:
    app, query = result.app, result.query
    session_id, fork_id = result.session_id, result.fork_id
    out.print()
    out.print(f"Derived message history of {session_id}", style="bold underline")
    out.print(render.messages_view(app.messages(session_id)))
    out.print()
    events = app.read_events(session_id)
    classes = {r.seq: r.surface for r in query.list_events(session_id)}
    notes = replacement_notes(events)
    surface_events = [e for e in events if "surfaceOp" in e]
    log_only = len(events) - len(surface_events)
    out.print(
        render.events_table(
            f"Surface of {session_id}: {len(surface_events)} message events, "
            f"current and shadowed ({log_only} log-only events not shown)",
            surface_events,
            classes,
            notes=notes,
        )
    )
    page = query.list_summaries(limit=50)
    mine = [row for row in page.items if row.id in {session_id, fork_id}]
    out.print(render.summaries_table(mine, "Listing (this demo's sessions)"))
    out.print("Lineage", style="bold underline")
    out.print(render.lineage_view(query.trace_session(session_id)))
    out.print()
    store = (
        "" if state.store_url == DEFAULT_STORE_URL else f" --store {state.store_url}"
    )
    out.print("Try next:", style="bold")
    for command in (
        f"agentlog{store} ls",
        f"agentlog{store} show {session_id}",
        f"agentlog{store} trace-event {session_id} {result.checkpoint_seq}",
        f"agentlog{store} messages {fork_id}",
    ):
        say(out, f"  {command}")


# ---------------------------------------------------------------- writing


@cli.command("import")
def import_command(
    ctx: typer.Context,
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE...", help="JSONL logs (ours or harness)."),
    ],
    strict: Annotated[
        bool, typer.Option("--strict", help="Also check the turn invariants.")
    ] = False,
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="Fill a {{NAME}} placeholder, e.g. --set cwd=/srv/app.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Store log files as new sessions; prints each new session id."""
    substitutions: dict[str, str] = {}
    for assignment in assignments or []:
        name, equals, value = assignment.partition("=")
        if not equals or not name:
            msg = f"--set expects NAME=VALUE, got {assignment!r}"
            raise typer.BadParameter(msg)
        substitutions[name] = value
    results: list[dict[str, Any]] = []
    failures = 0
    with opened(ctx) as app:
        progress = Progress(
            TextColumn("importing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=err,
            transient=True,
            disable=len(files) < 2 or not err.is_terminal,
        )
        with progress:
            task = progress.add_task("", total=len(files))
            for path in files:
                progress.update(task, description=path.name)
                try:
                    result = import_log(
                        app, path, strict=strict, substitutions=substitutions
                    )
                except (AgentlogError, ValueError, TypeError, OSError) as error:
                    failures += 1
                    results.append({"file": str(path), "error": str(error)})
                    if not as_json:
                        say(err, f"{path}: {error}", style="red")
                else:
                    stored = app.is_stored(result.session_id)
                    results.append(
                        {
                            "file": str(path),
                            "sessionId": result.session_id if stored else None,
                            "report": result.report,
                        }
                    )
                    if not as_json:
                        for line in result.report:
                            say(err, f"{path}: warning: {line}", style="yellow")
                        if stored:
                            say(out, result.session_id)
                progress.advance(task)
    if as_json:
        emit_json(results)
    if failures:
        raise typer.Exit(EXIT_ERROR)


@cli.command()
def export(
    ctx: typer.Context,
    session_id: SessionId,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", metavar="FILE", help="Write here, not stdout."),
    ] = None,
    zstd: Annotated[
        bool, typer.Option("--zstd", help="Zstandard-compress (default for *.zstd).")
    ] = False,
) -> None:
    """Write a session as our JSONL: a header line, then one event per line."""
    compress = zstd or (output is not None and output.suffix == ".zstd")
    with opened(ctx) as app:
        data = export_session(app, session_id, compress=compress)
        if output is None:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            output.write_bytes(data)
            lines = data.count(b"\n") - 1 if not compress else None
            count = f"{lines} events" if lines is not None else "compressed"
            say(err, f"wrote {output} ({count})")


@cli.command()
def fork(
    ctx: typer.Context,
    session_id: SessionId,
    at: Annotated[
        int | None,
        typer.Option("--at", metavar="SEQ", help="A turn/end seq (default: the last)."),
    ] = None,
    child_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="The new session's id.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Start a new session seeded with this one's events up to a turn end."""
    with opened(ctx) as app:
        child = app.fork(session_id, boundary=at, child_session_id=child_id)
        header = child.header
        app.close(child)
    if as_json:
        emit_json(header)
        return
    inherited = header.get("seedLength", 0)
    say(out, str(header["id"]))
    say(err, f"forked {session_id} with {inherited} events")


@cli.command()
def repair(
    ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False
) -> None:
    """Close a crashed session's open turn (session-core §6.3)."""
    with opened(ctx) as app:
        closers = app.repair(session_id)
    if as_json:
        emit_json(closers)
    elif not closers:
        say(out, f"{session_id}: nothing to repair (no open turn)")
    else:
        out.print(render.events_table(f"repaired {session_id}: appended", closers))


# ---------------------------------------------------------------- reading


@cli.command("ls")
def list_command(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Rows per page.")] = 50,
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
    out.print(render.summaries_table(page.items, "Sessions"))
    if page.next_cursor:
        say(out, f"more: agentlog ls --cursor {page.next_cursor}", style="dim")


@cli.command()
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
    out.print(render.header_view(header, title))
    out.print(
        render.events_table(f"{len(events)} events", events, classes, notes=notes)
    )


@cli.command()
def messages(
    ctx: typer.Context,
    session_id: SessionId,
    last: Annotated[
        int | None, typer.Option("--last", min=0, metavar="N", help="Only the last N.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The derived LLM message history (what the model sees next)."""
    with opened(ctx) as app:
        derived = app.messages(session_id, last=last)
    if as_json:
        emit_json(derived)
    else:
        out.print(render.messages_view(derived))


@cli.command()
def surface(
    ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False
) -> None:
    """The current surface events, in model-history order."""
    with opened(ctx) as app:
        snapshot = SessionQuery(app).read_surface(session_id)
    if as_json:
        emit_json(snapshot.to_json())
        return
    through = snapshot.captured_through_seq
    title = f"surface of {session_id} · {len(snapshot.events)} events"
    title += f" · captured through seq {through}" if through is not None else ""
    out.print(render.events_table(title, snapshot.events))


@cli.command()
def event(
    ctx: typer.Context,
    session_id: SessionId,
    seq: Seq,
    before: Annotated[int, typer.Option("--before", metavar="N")] = 0,
    after: Annotated[int, typer.Option("--after", metavar="N")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """One event in full, with up to N raw events before and after it."""
    with opened(ctx) as app:
        window = SessionQuery(app).read_event(session_id, seq, before, after)
    if as_json:
        emit_json(window.to_json())
    else:
        out.print(render.window_view(window))


@cli.command()
def trace(ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False) -> None:
    """A session's lineage: its ancestors and the sessions forked from it."""
    with opened(ctx) as app:
        lineage = SessionQuery(app).trace_session(session_id)
    if as_json:
        emit_json(lineage.to_json())
    else:
        out.print(render.lineage_view(lineage))


@cli.command("trace-event")
def trace_event(
    ctx: typer.Context, session_id: SessionId, seq: Seq, as_json: JsonFlag = False
) -> None:
    """Where an event went: what replaced it, what it replaced, its provenance."""
    with opened(ctx) as app:
        traced = SessionQuery(app).trace_event(session_id, seq)
    if as_json:
        emit_json(traced.to_json())
    else:
        out.print(render.event_trace_view(traced))


def main() -> None:
    """The console script ``agentlog``."""
    cli(prog_name="agentlog")
