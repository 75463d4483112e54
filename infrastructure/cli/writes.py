"""The commands that write: the demo, import, export, fork and repair.

``demo`` drives :func:`~infrastructure.demo.run_demo` and shows what it stored;
the others are one use case of :class:`~application.sessions.Sessions` or
:mod:`~infrastructure.jsonl` each.
"""

from __future__ import annotations

import sys
from pathlib import Path  # noqa: TC003 - typer reads the annotations at runtime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from domain.errors import AgentlogError
from infrastructure.cli import render
from infrastructure.cli.program import (
    EXIT_ERROR,
    JsonFlag,
    SessionId,
    cli,
    emit_json,
    err,
    opened,
    out,
    reported,
    say,
    state_of,
)
from infrastructure.cli.reads import replacement_notes
from infrastructure.jsonl import export_session, import_log
from infrastructure.store import DEFAULT_STORE_URL, parse_store_url

if TYPE_CHECKING:
    from infrastructure.cli.program import CliState
    from infrastructure.demo import DemoResult


@cli.command()
def demo(ctx: typer.Context) -> None:
    """Run a scripted agent session end to end, then show what was stored."""
    from infrastructure.demo import run_demo

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
