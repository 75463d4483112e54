"""``agentlog ls``: the listing, a page at a time, and the next page's command.

In a module of its own, apart from the other reads
(:mod:`~agentlog.infrastructure.cli.reads`): an unfiltered listing reads the
listing view through the store alone
(:func:`~agentlog.application.summaries.stored_page`), so it imports neither the
query service nor the session aggregate, the event vocabulary or pydantic
(docs/performance.md). ``--cwd``/``--owner`` list through the scoped query, whose
rules keep unseen sessions out (docs/scope.md); the page is the same.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from agentlog.infrastructure.cli.console import out, say
from agentlog.infrastructure.cli.program import (
    cli,
    emit_json,
    encodable_parameter,
    fail,
    json_option,
    opened,
    opened_views,
)
from agentlog.infrastructure.cli.render import summaries_table
from agentlog.infrastructure.cli.terminal import mask_secrets

if TYPE_CHECKING:
    from agentlog.application.query_models import SessionSummaryPage
    from agentlog.application.summaries import SummaryPage

LIMIT_MAX = 10_000
"""The most rows one listing page holds; more pages follow with ``--cursor``."""


def next_page_command(ctx: click.Context, *options: str) -> str:
    """The command that prints the next page, run as printed: the same store
    (when one was named; a password in it is masked), then ``options`` (the
    page size, the filters and where the next page starts)."""
    words = ["agentlog"]
    store = ctx.parent.params.get("store") if ctx.parent is not None else None
    if store:
        words += ["--store", mask_secrets(store)]
    words += [*ctx.command_path.split()[1:], *options]
    return shlex.join(words)


def filter_options(**values: str | None) -> list[str]:
    """``--name value`` for each filter given, in order (a next-page hint's)."""
    words: list[str] = []
    for name, value in values.items():
        if value is not None:
            words += [f"--{name}", value]
    return words


@cli.command("ls")
@click.option(
    "--limit",
    type=click.IntRange(1, LIMIT_MAX),
    default=50,
    show_default=True,
    help=f"Rows per page (1 to {LIMIT_MAX}; --cursor pages on).",
)
@click.option("--cursor", help="The nextCursor of a previous page.")
@click.option(
    "--cwd",
    metavar="P",
    callback=encodable_parameter,
    help="Only the sessions whose cwd is exactly P.",
)
@click.option(
    "--owner",
    metavar="O",
    callback=encodable_parameter,
    help="Only the sessions of owner O.",
)
@json_option
@click.pass_context
def list_command(
    ctx: click.Context,
    limit: int,
    cursor: str | None,
    cwd: str | None,
    owner: str | None,
    as_json: bool,
) -> None:
    """List sessions, newest first."""
    filtered = cwd is not None or owner is not None
    page = (
        _scoped_page(ctx, limit, cursor, cwd, owner)
        if filtered
        else _page(ctx, limit, cursor)
    )
    if as_json:
        emit_json(page.to_json())
        return
    if not page.items:
        empty = "no sessions yet; try: agentlog demo"
        out.print("no sessions match --cwd/--owner" if filtered else empty)
        return
    out.print(summaries_table(page.items, "Sessions"))
    if page.next_cursor:
        following = next_page_command(
            ctx,
            "--limit",
            str(limit),
            *filter_options(cwd=cwd, owner=owner),
            "--cursor",
            page.next_cursor,
        )
        say(out, f"more: {following}", style="dim")


def _page(ctx: click.Context, limit: int, cursor: str | None) -> SummaryPage:
    """Every session's row: the listing view, read through the store alone."""
    from agentlog.application.summaries import stored_page

    with opened_views(ctx) as app:
        try:
            return stored_page(app, limit, cursor=cursor)
        except ValueError as error:
            raise fail(str(error)) from None


def _scoped_page(
    ctx: click.Context,
    limit: int,
    cursor: str | None,
    cwd: str | None,
    owner: str | None,
) -> SessionSummaryPage:
    """The rows ``--cwd``/``--owner`` admit, through the scoped query."""
    from agentlog.application.query import SessionQuery
    from agentlog.application.scope import ANY, Scope

    scope = Scope(
        cwd=ANY if cwd is None else cwd, owner=ANY if owner is None else owner
    )
    with opened(ctx) as app:
        try:
            return SessionQuery(app).scoped(scope).list_summaries(limit, cursor=cursor)
        except ValueError as error:
            raise fail(str(error)) from None
