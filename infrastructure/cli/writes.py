"""The commands that write: import, export, fork and repair.

Each is one use case of :class:`~agentlog.application.sessions.Sessions` or
:mod:`~agentlog.application.transfer`, the files read and written by
:mod:`~agentlog.infrastructure.formats.jsonl`.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentlog.application.transfer import export_events
from agentlog.domain.errors import SessionConflictError, SessionForkError
from agentlog.infrastructure.cli.console import err, out, say
from agentlog.infrastructure.cli.imports import Imports
from agentlog.infrastructure.cli.program import (
    EXIT_ERROR,
    SEQ_MAX,
    cli,
    emit_json,
    encodable_parameter,
    json_option,
    opened,
    session_id_argument,
)
from agentlog.infrastructure.cli.progress import Meter, counted, working
from agentlog.infrastructure.cli.render import (
    events_table,
)
from agentlog.infrastructure.formats.jsonl import (
    ZSTD_SUFFIXES,
    write_atomically,
    write_log,
)

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

REPAIR_ATTEMPTS = 5


@cli.command("import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--strict", is_flag=True, help="Also check the turn invariants.")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="NAME=VALUE",
    help="Fill a {{NAME}} placeholder, e.g. --set cwd=/srv/app.",
)
@click.option(
    "--new-id",
    is_flag=True,
    help="Give each session a fresh id (a child imported with its parent"
    " keeps pointing at it).",
)
@json_option
@click.pass_context
def import_command(
    ctx: click.Context,
    files: tuple[str, ...],
    strict: bool,
    assignments: tuple[str, ...],
    new_id: bool,
    as_json: bool,
) -> None:
    """Store log files as new sessions; prints each new session id.

    FILE... are JSONL logs, ours or the harness's, plain or Zstandard; - is stdin.
    """
    substitutions: dict[str, str] = {}
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not name:
            msg = f"--set expects NAME=VALUE, got {assignment!r}"
            raise click.BadParameter(msg)
        substitutions[name] = value
    results: list[dict[str, Any]] = []
    failures = 0
    imports: Imports | None = None

    def stored(app: Sessions) -> list[str]:
        return [] if imports is None else imports.stored_now(app)

    with opened(ctx, create=True, stored=stored) as app, Meter(err) as meter:
        imports = Imports(app, meter, substitutions, strict=strict, new_id=new_id)
        for path, outcome in imports.run(list(files)):
            if isinstance(outcome, str):
                failures += 1
                results.append({"file": path, "error": outcome})
                if not as_json:
                    say(err, f"{path}: {outcome}", style="red")
                continue
            results.append(
                {
                    "file": path,
                    "sessionId": outcome.session_id,
                    "events": outcome.events,
                    "report": outcome.report,
                }
            )
            if not as_json:
                for line in outcome.report:
                    say(err, f"{path}: warning: {line}", style="yellow")
                say(out, outcome.session_id)
    if as_json:
        emit_json(results)
    if failures:
        raise click.exceptions.Exit(EXIT_ERROR)


@cli.command()
@session_id_argument
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write here, not stdout.",
)
@click.option(
    "--zstd", is_flag=True, help="Zstandard-compress (default for *.zst, *.zstd)."
)
@click.pass_context
def export(
    ctx: click.Context, session_id: str, output: Path | None, zstd: bool
) -> None:
    """Write a session as our JSONL: a header line, then one event per line."""
    compress = zstd or (output is not None and output.suffix in ZSTD_SUFFIXES)
    with opened(ctx) as app, Meter(err, unit="events") as meter:
        header = app.header(session_id)
        meter.phase(f"exporting {session_id}", app.stored_length(session_id))
        events = counted(export_events(app, session_id), meter)
        if output is None:
            sys.stdout.flush()
            write_log(sys.stdout.buffer, header, events, compress=compress)
            sys.stdout.buffer.flush()
            return
        write_atomically(
            output, lambda sink: write_log(sink, header, events, compress=compress)
        )
    say(err, f"wrote {output} ({meter.done} events)")


@cli.command()
@session_id_argument
@click.option(
    "--at",
    type=click.IntRange(0, SEQ_MAX),
    metavar="SEQ",
    help="A turn/end seq (default: the last event, which must be one).",
)
@click.option(
    "--id",
    "child_id",
    metavar="ID",
    help="The new session's id (default: a new UUID).",
    callback=encodable_parameter,
)
@click.option(
    "--repair",
    "repair_first",
    is_flag=True,
    help="Close the source's open turn first (a crashed writer).",
)
@json_option
@click.pass_context
def fork(
    ctx: click.Context,
    session_id: str,
    at: int | None,
    child_id: str | None,
    repair_first: bool,
    as_json: bool,
) -> None:
    """Start a new session seeded with this one's events up to a turn end."""
    new_id = child_id or str(uuid.uuid4())

    def stored(app: Sessions) -> list[str]:
        return [new_id] if app.is_stored(new_id) else []

    with opened(ctx, stored=stored) as app, working(err, f"forking {session_id}"):
        if repair_first:
            _repair(app, session_id)
        try:
            child = app.fork(session_id, boundary=at, child_session_id=new_id)
        except SessionForkError as error:
            raise _fork_refusal(app, error, session_id, at) from None
        header = child.header
        try:
            app.close(child)
        except SessionConflictError:
            # Only another writer creating the same id conflicts with a new session.
            msg = f'session "{new_id}" already exists'
            raise SessionForkError(
                msg, SessionForkError.SESSION_ALREADY_EXISTS
            ) from None
    if as_json:
        emit_json(header)
        return
    inherited = header.get("seedLength", 0)
    say(out, str(header["id"]))
    say(err, f"forked {session_id} with {inherited} events")


def _fork_refusal(
    app: Sessions, error: SessionForkError, session_id: str, at: int | None
) -> SessionForkError:
    """The refusal, with what to do when the default boundary is an open turn."""
    if error.code != SessionForkError.OPEN_TURN or at is not None:
        return error
    if not app.load_aggregate(session_id).closers():
        return error
    msg = (
        f"{error}: its last turn is open (a writer crashed?); run "
        f"`agentlog repair {session_id}` first, or fork with --repair"
    )
    return SessionForkError(msg, SessionForkError.OPEN_TURN)


@cli.command()
@session_id_argument
@json_option
@click.pass_context
def repair(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """Close a crashed session's open turn (docs/repair.md)."""

    length_before: list[int] = []

    def stored(app: Sessions) -> list[str]:
        """The closers were stored if the session grew since the command began."""
        if not length_before or app.stored_length(session_id) == length_before[0]:
            return []
        return [session_id]

    with opened(ctx, stored=stored) as app:
        length_before.append(app.stored_length(session_id))
        closers = _repair(app, session_id)
    if as_json:
        emit_json(closers)
    elif not closers:
        say(out, f"{session_id}: nothing to repair (no open turn)")
    else:
        out.print(events_table(f"repaired {session_id}: appended", closers))


def _repair(app: Sessions, session_id: str) -> list[Envelope]:
    """Repair, reading the session again when another writer appended first.

    Two ``repair`` commands at once both see the open turn; the one that loses the
    race finds it closed on the next read, which is success, not a conflict.
    """
    for _ in range(REPAIR_ATTEMPTS - 1):
        try:
            return app.repair(session_id)
        except SessionConflictError:
            continue
    return app.repair(session_id)
