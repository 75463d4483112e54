"""Listing summaries: a listing row per session, for live sessions too, and the
opaque keyset cursor that pages through them newest first."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from agentlog.application.query_models import SessionSummary
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

    from agentlog.domain.header import Header
    from agentlog.domain.json import Envelope


def encode_cursor(created_at: Number, session_id: str) -> str:
    return base64.urlsafe_b64encode(dumps([created_at, session_id])).decode("ascii")


def decode_cursor(cursor: object) -> tuple[Number, str]:
    """The position a listing cursor names; a bad one is an invalid window."""
    error = SessionQueryError.invalid_window(f"invalid listing cursor {cursor!r}")
    if type(cursor) is not str:
        raise error
    try:
        value = loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, RecursionError, binascii.Error) as cause:
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


def summary_row(row: ListingRow, *, live: bool, persisted: bool) -> SessionSummary:
    header = row.header or {}
    created = row.created_at if row.created_at is not None else 0
    # Validating is three times faster than ``model_construct`` here (pydantic-core
    # does it in Rust), and a listing page builds fifty of these.
    return SessionSummary(
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
        header=copy_json(dict(header)),
    )
