"""Listing summaries: a listing row per session, for live sessions too, and the
opaque keyset cursor that pages through them newest first.

The rows here are plain objects, not the query's pydantic models: a process that
only lists (``agentlog ls``) reads its page with :func:`stored_page` and never
imports pydantic or the event vocabulary (docs/performance.md).
``SessionQuery.list_summaries`` turns the same rows into its models
(:class:`~agentlog.application.query_models.SessionSummary`), whose JSON is
the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.application.catch_up import views_of
from agentlog.application.store_reader import StoreReader
from agentlog.application.view_rows import (
    HEADER_TYPE,
    ListingRow,
    Number,
    ProjectedEvent,
    fold_listing,
)
from agentlog.domain.errors import SessionQueryError
from agentlog.domain.json import copy_json, dumps, loads

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.application import Application

    from agentlog.application.scope import Scope
    from agentlog.domain.header import Header
    from agentlog.domain.json import Envelope, Json


class SummaryRow:
    """A listing row: the fields of ``SessionSummary``, without pydantic.

    A plain class, not a dataclass: building one costs a millisecond at import,
    which ``agentlog ls`` would pay on every run.
    """

    __slots__ = (
        "created_at",
        "cwd",
        "event_count",
        "first_prompt",
        "header",
        "id",
        "live",
        "owner",
        "parent_session",
        "persisted",
        "title",
        "updated_at",
    )

    def __init__(
        self,
        *,
        id: str,
        created_at: Any,
        updated_at: Any,
        event_count: int,
        title: str | None,
        first_prompt: str | None,
        parent_session: str | None,
        cwd: str | None,
        owner: str | None,
        live: bool,
        persisted: bool,
        header: dict[str, Any],
    ) -> None:
        self.id = id
        self.created_at = created_at
        self.updated_at = updated_at
        self.event_count = event_count
        self.title = title
        self.first_prompt = first_prompt
        self.parent_session = parent_session
        self.cwd = cwd
        self.owner = owner
        self.live = live
        self.persisted = persisted
        self.header = header

    def to_json(self) -> Json:
        """``SessionSummary.to_json()``: camelCase keys, absent optionals left out."""
        out: dict[str, Json] = {
            "id": self.id,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "eventCount": self.event_count,
        }
        optional = (
            ("title", self.title),
            ("firstPrompt", self.first_prompt),
            ("parentSession", self.parent_session),
            ("cwd", self.cwd),
            ("owner", self.owner),
        )
        out.update((key, value) for key, value in optional if value is not None)
        out["live"] = self.live
        out["persisted"] = self.persisted
        out["header"] = copy_json(self.header)
        return out


class SummaryPage:
    """One page of rows; ``next_cursor`` continues after its last row."""

    __slots__ = ("items", "next_cursor")

    def __init__(self, items: list[SummaryRow], next_cursor: str | None) -> None:
        self.items = items
        self.next_cursor = next_cursor

    def to_json(self) -> Json:
        """``SessionSummaryPage.to_json()``."""
        return {
            "items": [item.to_json() for item in self.items],
            "nextCursor": self.next_cursor,
        }


def encode_cursor(created_at: Number, session_id: str) -> str:
    from base64 import urlsafe_b64encode  # only when a page is followed by another

    return urlsafe_b64encode(dumps([created_at, session_id])).decode("ascii")


def decode_cursor(cursor: object) -> tuple[Number, str]:
    """The position a listing cursor names; a bad one is an invalid window."""
    error = SessionQueryError.invalid_window(f"invalid listing cursor {cursor!r}")
    if type(cursor) is not str:
        raise error
    try:
        from base64 import urlsafe_b64decode

        value = loads(urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, RecursionError) as cause:  # binascii.Error too
        raise error from cause
    match value:
        case [int() | float() as created_at, str() as session_id]:
            return created_at, session_id
    raise error


def row_after(row: ListingRow, after: tuple[Number, str]) -> bool:
    created = row.created_at if row.created_at is not None else 0
    return (-created, row.session_id) > (-after[0], after[1])


def fold_live_row(
    base: ListingRow | None, header: Header, events: Sequence[Envelope]
) -> ListingRow:
    """A listing row for a live session: its stored row plus its pending events.

    The listing folds are idempotent (counts and times take maxima, the first
    prompt the lowest seq, the title the highest), so folding events the row
    already holds changes nothing.
    """
    session_id = str(header.get("id"))
    created = ProjectedEvent(session_id, HEADER_TYPE, {"type": HEADER_TYPE, **header})
    projected = [ProjectedEvent(session_id, str(e.get("type")), e) for e in events]
    return fold_listing(base, [created, *projected], session_id)


def summary_row(
    row: ListingRow, *, live: bool, persisted: bool, copy: bool = True
) -> SummaryRow:
    """The summary of a listing row; ``copy=False`` when its header is the
    caller's own (decoded for this read), not shared with a view or a handle."""
    header = row.header or {}
    created = row.created_at if row.created_at is not None else 0
    return SummaryRow(
        id=row.session_id,
        created_at=created,
        updated_at=row.updated_at if row.updated_at is not None else created,
        event_count=row.event_count,
        title=row.title,
        first_prompt=row.first_prompt,
        parent_session=row.parent_session,
        cwd=row.cwd,
        owner=row.owner,
        live=live,
        persisted=persisted,
        header=copy_json(dict(header)) if copy else header,
    )


def check_window(limit: object, offset: object) -> None:
    """A page size and offset a listing accepts (``SESSION_QUERY_INVALID_WINDOW``)."""
    if type(limit) is not int or limit <= 0:
        msg = "limit must be a positive integer"
        raise SessionQueryError.invalid_window(msg)
    if type(offset) is not int or offset < 0:
        msg = "offset must be a non-negative integer"
        raise SessionQueryError.invalid_window(msg)


def stored_rows(
    reader: StoreReader,
    count: int,
    after: tuple[Number, str] | None,
    *,
    scope: Scope | None = None,
    live: Sequence[str] = (),
) -> tuple[list[ListingRow], dict[str, ListingRow]]:
    """Up to ``count`` rows of the caught-up view after ``after`` (one more to
    tell whether a page follows, and room for the ``live`` ids, which the
    caller folds itself), and the stored rows of those ``live`` ids."""
    try:
        reader.catch_up()
        stored = reader.page(limit=count + len(live) + 1, after=after, scope=scope)
        persisted = reader.rows(list(live)) if live else {}
    except Exception as error:
        raise SessionQueryError.listing_failed(error) from error
    return stored, persisted


def page_of(rows: list[SummaryRow], limit: int, offset: int = 0) -> SummaryPage:
    """Rows ``offset..offset+limit`` newest first, and the cursor after them."""
    rows.sort(key=lambda row: (-row.created_at, row.id))
    page = rows[offset : offset + limit]
    more = len(rows) > offset + limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more else None
    return SummaryPage(items=page, next_cursor=next_cursor)


def stored_page(
    app: Application[Any], limit: int, *, cursor: str | None = None
) -> SummaryPage:
    """A page of the listing of ``app``'s store, for a process that holds no
    live session (any application on the store: ``Sessions`` or the one of
    :func:`~agentlog.infrastructure.store.open_views`).

    What ``SessionQuery(app).list_summaries(limit, cursor=cursor)`` returns
    there, as plain rows: the same rows, order, cursor and errors.
    """
    check_window(limit, 0)
    after = None if cursor is None else decode_cursor(cursor)
    stored, _ = stored_rows(StoreReader(app, views_of(app)), limit, after)
    rows = [summary_row(row, live=False, persisted=True) for row in stored]
    return page_of(rows, limit)
