"""The commands that write: import, export, fork and repair.

Each is one use case of :class:`~agentlog.application.sessions.Sessions` or
:mod:`~agentlog.infrastructure.formats.jsonl`.
"""

from __future__ import annotations

import sys
from pathlib import Path  # noqa: TC003 - typer reads the annotations at runtime
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from agentlog.domain.errors import AgentlogError
from agentlog.infrastructure.cli.program import (
    EXIT_ERROR,
    JsonFlag,
    SessionId,
    cli,
    emit_json,
    encodable,
    err,
    opened,
    out,
    say,
)
from agentlog.infrastructure.cli.render import (
    events_table,
)
from agentlog.infrastructure.formats.jsonl import export_session, import_log

WRITE = "Write"


@cli.command("import", rich_help_panel=WRITE)
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


@cli.command(rich_help_panel=WRITE)
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


@cli.command(rich_help_panel=WRITE)
def fork(
    ctx: typer.Context,
    session_id: SessionId,
    at: Annotated[
        int | None,
        typer.Option("--at", metavar="SEQ", help="A turn/end seq (default: the last)."),
    ] = None,
    child_id: Annotated[
        str | None,
        typer.Option(
            "--id", metavar="ID", help="The new session's id.", callback=encodable
        ),
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


@cli.command(rich_help_panel=WRITE)
def repair(
    ctx: typer.Context, session_id: SessionId, as_json: JsonFlag = False
) -> None:
    """Close a crashed session's open turn (docs/repair.md)."""
    with opened(ctx) as app:
        closers = app.repair(session_id)
    if as_json:
        emit_json(closers)
    elif not closers:
        say(out, f"{session_id}: nothing to repair (no open turn)")
    else:
        out.print(events_table(f"repaired {session_id}: appended", closers))
