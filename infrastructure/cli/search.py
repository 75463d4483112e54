"""The ``search`` command: literal content search over every session (docs/search.md).

With ``--session`` it lists one session's matching events; otherwise sessions, each
with its strongest hit. Snippets are escaped piece by piece (``printable``), so the
highlight covers exactly the match and no data drives the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, get_args

import click
from rich.text import Text

from agentlog.application.query import SessionQuery
from agentlog.application.query_models import SurfaceClass
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.infrastructure.cli.console import out, say
from agentlog.infrastructure.cli.program import (
    cli,
    emit_json,
    encodable_parameter,
    json_option,
    opened,
)
from agentlog.infrastructure.cli.terminal import printable

if TYPE_CHECKING:
    from agentlog.application.search_models import SearchHit

SURFACES = get_args(SurfaceClass)
HIGHLIGHT = "bold reverse"


def snippet_text(hit: SearchHit) -> Text:
    """The snippet with each highlighted span styled; every piece escaped."""
    text = Text()
    position = 0
    for start, end in hit.highlights:
        text.append(printable(hit.snippet[position:start], one_line=True))
        text.append(printable(hit.snippet[start:end], one_line=True), HIGHLIGHT)
        position = end
    text.append(printable(hit.snippet[position:], one_line=True))
    return text


def hit_line(hit: SearchHit, title: str | None = None) -> Text:
    head = Text(printable(hit.session_id, one_line=True), "cyan")
    head.append(f"  #{hit.seq} {printable(hit.type, one_line=True)} [{hit.surface}]")
    if hit.live:
        head.append(" live", "yellow")
    if title is not None:
        head.append("  " + printable(title, one_line=True), "bold")
    return Text("\n").join([head, Text("    ") + snippet_text(hit)])


def _surfaces(values: tuple[str, ...]) -> tuple[SurfaceClass, ...] | None:
    if not values:
        return None
    for value in values:
        if value not in SURFACES:
            msg = f"--surface must be one of {', '.join(SURFACES)}"
            raise click.BadParameter(msg)
    return tuple(values)  # type: ignore[arg-type]


@cli.command()
@click.argument("query", metavar="QUERY")
@click.option(
    "--session", metavar="ID", callback=encodable_parameter, help="One session."
)
@click.option("--cwd", metavar="P", help="Sessions with this cwd.")
@click.option(
    "--owner",
    metavar="O",
    callback=encodable_parameter,
    help="Sessions of this owner.",
)
@click.option("--type", "types", multiple=True, metavar="T", help="Event type.")
@click.option(
    "--surface",
    "surfaces",
    multiple=True,
    metavar="S",
    help="current, shadowed, log-only.",
)
@click.option("--since", type=int, metavar="MS", help="Event time >= MS.")
@click.option("--until", type=int, metavar="MS", help="Event time <= MS.")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--cursor", help="A previous page's nextCursor.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    session: str | None,
    cwd: str | None,
    owner: str | None,
    types: tuple[str, ...],
    surfaces: tuple[str, ...],
    since: int | None,
    until: int | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
) -> None:
    """Find sessions (or, with --session, events) containing QUERY literally."""
    if session is not None and (cwd is not None or owner is not None):
        msg = "--cwd and --owner choose sessions; with --session they would be ignored"
        raise click.BadParameter(msg)
    events = EventFilter(
        types=tuple(types) if types else None,
        surfaces=_surfaces(surfaces),
        time_from=since,
        time_to=until,
    )
    with opened(ctx) as app:
        reader = SessionQuery(app)
        if session is not None:
            page = reader.search_events(
                session, query, event_filter=events, limit=limit, cursor=cursor
            )
            lines = [hit_line(hit) for hit in page.items]
        else:
            sessions = SessionFilter(
                cwd=None if cwd is None else (cwd,),
                owner=None if owner is None else (owner,),
            )
            found = reader.search_sessions(
                query,
                session_filter=sessions,
                event_filter=events,
                limit=limit,
                cursor=cursor,
            )
            lines = [hit_line(item.hit, item.title) for item in found.items]
            page = found  # type: ignore[assignment]
    if as_json:
        emit_json(page.to_json())
        return
    if not lines:
        out.print("no matches")
    for line in lines:
        out.print(line)
    if page.next_cursor:
        say(out, f"more: --cursor {page.next_cursor}", style="dim")
