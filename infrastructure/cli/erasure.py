"""The commands that forget: ``erase``, ``erasures`` and ``gc`` (docs/erasure.md).

Each is one use case of :class:`~agentlog.application.erasure.SessionEraser`. A
stopped ``gc`` says how many sessions it erased: each erase is one transaction,
so every session is either fully erased or untouched.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from agentlog.application.erasure import (
    REASON_MAX_CHARS,
    cutoff_before,
    parse_duration,
)
from agentlog.domain.session import now_ms
from agentlog.infrastructure.cli.console import err, out, say
from agentlog.infrastructure.cli.program import (
    cli,
    emit_json,
    json_option,
    opened,
    session_id_argument,
)
from agentlog.infrastructure.cli.progress import Meter
from agentlog.infrastructure.cli.render import when

if TYPE_CHECKING:
    from agentlog.application.sessions import Sessions

DEFAULT_GC_REASON = "retention"


def _reason(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value or len(value) > REASON_MAX_CHARS:
        msg = f"a reason is 1 to {REASON_MAX_CHARS} characters"
        raise click.BadParameter(msg)
    return value


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    return value


@cli.command()
@session_id_argument
@click.option(
    "--reason",
    required=True,
    metavar="TEXT",
    help="Why (kept in the audit; write no personal data here).",
    callback=_reason,
)
@click.option("--descendants", is_flag=True, help="Also erase every fork below it.")
@json_option
@click.pass_context
def erase(
    ctx: click.Context,
    session_id: str,
    reason: str,
    descendants: bool,
    as_json: bool,
) -> None:
    """Erase a session everywhere: events, snapshots, listing, search, lineage.

    Its forks keep their own copies of the events they were seeded with: without
    --descendants they stay, and the command names them.
    """
    erased: list[str] = []

    def stored(app: Sessions) -> list[str]:
        # Reported as what the stop left erased (the erase is one transaction).
        return [session_id] if app.is_erased(session_id) else []

    with opened(ctx, stored=stored) as app:
        forks = [] if descendants else _forks(app, session_id)
        records = app.erase(session_id, reason=reason, descendants=descendants)
        erased = [record.session_id for record in records]
    if as_json:
        emit_json([record.to_json() for record in records])
        return
    others = [other for other in erased if other != session_id]
    if session_id not in erased:
        gone = f"erased {len(others)} descendant(s) of {session_id} (already gone)"
        say(out, f"{gone}: {', '.join(others)}")
        return
    more = f" and {len(others)} descendant(s): {', '.join(others)}" if others else ""
    say(out, f"erased {session_id}{more}")
    if forks:
        say(
            err,
            f"note: {len(forks)} fork(s) keep their own copy of the events they were"
            f" seeded with: {', '.join(forks)}; erase them with: agentlog erase"
            f" {shlex.quote(session_id)} --descendants --reason ...",
            style="yellow",
        )


def _forks(app: Sessions, session_id: str) -> list[str]:
    """Every stored session forked from this one, at any depth (none if it is
    not found: the erase then says so)."""
    from agentlog.application.query import SessionQuery
    from agentlog.domain.errors import AgentlogError

    try:
        trace = SessionQuery(app).trace_session(session_id)
    except AgentlogError:
        return []
    found: list[str] = []
    nodes = list(trace.descendants)
    while nodes:
        node = nodes.pop(0)
        found.append(str(node.session.header.get("id")))
        nodes.extend(node.descendants)
    return found


@cli.command()
@json_option
@click.pass_context
def erasures(ctx: click.Context, as_json: bool) -> None:
    """The audit: every erased session with its time (UTC) and reason."""
    with opened(ctx) as app:
        records = app.erasures()
    if as_json:
        emit_json([record.to_json() for record in records])
        return
    for record in records:
        say(out, f"{record.session_id}  {when(record.erased_at)}  {record.reason}")


@cli.command()
@click.option(
    "--older-than",
    required=True,
    metavar="DURATION",
    help="Erase sessions whose last event is older: 30d, 12h, 90m, 45s.",
    callback=_duration,
)
@click.option(
    "--dry-run", is_flag=True, help="List what would be erased; erase nothing."
)
@click.option(
    "--reason",
    default=DEFAULT_GC_REASON,
    show_default=True,
    metavar="TEXT",
    help="Kept in the audit.",
    callback=_reason,
)
@click.option(
    "--vacuum-full",
    is_flag=True,
    help="PostgreSQL: then rewrite the tables (VACUUM FULL), removing the"
    " erased rows' bytes; locks each table while it runs.",
)
@json_option
@click.pass_context
def gc(
    ctx: click.Context,
    older_than: str,
    dry_run: bool,
    reason: str,
    vacuum_full: bool,
    as_json: bool,
) -> None:
    """Erase the sessions last written before a cutoff (retention)."""
    cutoff = cutoff_before(parse_duration(older_than))
    started = now_ms()

    def stored(app: Sessions) -> list[str]:
        """After a stop: how many sessions this run erased (each one whole)."""
        count = sum(
            1
            for record in app.erasures()
            if record.erased_at >= started and record.reason == reason
        )
        return [f"the erasure of {count} session(s)"] if count else []

    with opened(ctx, stored=stored) as app, Meter(err, unit="sessions") as meter:

        def progress(count: int, total: int) -> None:
            if meter.total != total:
                meter.phase("erasing old sessions", total)
            meter.advance(count - meter.done)

        report = app.erase_older_than(
            cutoff,
            reason=reason,
            dry_run=dry_run,
            progress=progress,
            vacuum_full=vacuum_full,
        )
    if as_json:
        emit_json(report.to_json())
        return
    if dry_run:
        say(out, f"would erase {len(report.candidates)} session(s) (dry run)")
        for session_id in report.candidates:
            say(out, session_id)
        return
    kept = f"; kept {len(report.kept)} written to meanwhile" if report.kept else ""
    say(
        out, f"erased {len(report.erased)} of {len(report.candidates)} session(s){kept}"
    )
    if report.pending:
        say(
            err,
            f"note: {len(report.pending)} erased session(s) still have keys, scrub"
            " or hooks pending (see the log); the next open, erase or gc resumes"
            " them",
            style="yellow",
        )
    if not report.scrubbed:
        say(
            err,
            "note: the WAL could not be truncated (a reader holds it); the erased "
            "rows are gone, old page copies go at the next checkpoint",
            style="yellow",
        )
