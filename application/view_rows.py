"""The rows of the read models, and how one log line changes each of them.

Pure: a row is a frozen dataclass keyed by session id; a fold takes the current
row (or ``None``) and one event and returns the new row. The listing folds are
idempotent (maxima, the lowest prompt seq, the highest title seq), so applying
an event twice never changes a row.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from domain.title import TITLE_EVENT, is_eligible_message, message_text, normalize_title

if TYPE_CHECKING:
    from domain.json import Envelope

HEADER_TYPE = "session"
"""The stored topic (and ``type``) of the created event that carries the header."""
FIRST_PROMPT_MAX_BYTES = 1000
Number = int | float

# ------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class ProjectedEvent:
    """One stored log line as the projections see it (``type`` is the wire type)."""

    session_id: str
    type: str
    envelope: dict[str, Any]

    @property
    def header(self) -> dict[str, Any]:
        return {k: v for k, v in self.envelope.items() if k != "type"}


# --------------------------------------------------------------------- rows

COLUMN_KINDS = ("text", "int", "number", "json")


@dataclass(frozen=True, slots=True)
class ListingRow:
    """One session in the listing: header fields and what the log says so far."""

    session_id: str
    header: dict[str, Any] | None = None
    created_at: Number | None = None
    parent_session: str | None = None
    cwd: str | None = None
    event_count: int = 0
    updated_at: Number | None = None
    first_prompt: str | None = None
    first_prompt_seq: int | None = None
    title: str | None = None
    title_seq: int | None = None

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "header": "json",
        "created_at": "number",
        "parent_session": "text",
        "cwd": "text",
        "event_count": "int",
        "updated_at": "number",
        "first_prompt": "text",
        "first_prompt_seq": "int",
        "title": "text",
        "title_seq": "int",
    }


@dataclass(frozen=True, slots=True)
class TitleRow:
    """The latest ``session/title`` event of a session (latest seq wins)."""

    session_id: str
    seq: int
    time: Number
    data: Any

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "seq": "int",
        "time": "number",
        "data": "json",
    }

    def event(self) -> Envelope:
        return {
            "type": TITLE_EVENT,
            "seq": self.seq,
            "time": self.time,
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class LineageRow:
    """A session's parent link (parent -> children is the indexed direction)."""

    session_id: str
    parent_session: str | None
    created_at: Number | None
    header: dict[str, Any]

    KINDS: ClassVar[Mapping[str, str]] = {
        "session_id": "text",
        "parent_session": "text",
        "created_at": "number",
        "header": "json",
    }


def columns(row_type: type[Any]) -> list[tuple[str, str]]:
    """``(name, kind)`` per column, in field order (the row's constructor order)."""
    kinds: Mapping[str, str] = row_type.KINDS
    return [(f.name, kinds[f.name]) for f in dataclasses.fields(row_type)]


def row_values(row: Any) -> tuple[Any, ...]:
    return tuple(getattr(row, f.name) for f in dataclasses.fields(row))


def _number(value: object) -> Number | None:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return value
    return None


def _text(value: object) -> str | None:
    return value if type(value) is str else None


# ---------------------------------------------------------------- row folds


def listing_created(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    header = event.header
    row = row or ListingRow(event.session_id)
    created_at = _number(header.get("createdAt"))
    return dataclasses.replace(
        row,
        header=header,
        created_at=created_at,
        parent_session=_text(header.get("parentSession")),
        cwd=_text(header.get("cwd")),
        updated_at=row.updated_at if row.updated_at is not None else created_at,
    )


def listing_event(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    """Any log event: the count and the updated time move forward."""
    row = row or ListingRow(event.session_id)
    seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
    count = max(row.event_count, seq + 1) if type(seq) is int else row.event_count
    updated = row.updated_at
    if time is not None and (updated is None or time > updated):
        updated = time
    if count == row.event_count and updated == row.updated_at:
        return row
    return dataclasses.replace(row, event_count=count, updated_at=updated)


def listing_user_message(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    row = listing_event(row, event)
    seq = event.envelope.get("seq")
    if (
        type(seq) is int
        and (row.first_prompt_seq is None or seq < row.first_prompt_seq)
        and is_eligible_message(event.envelope)
    ):
        prompt = normalize_title(message_text(event.envelope), FIRST_PROMPT_MAX_BYTES)
        row = dataclasses.replace(row, first_prompt=prompt, first_prompt_seq=seq)
    return row


def listing_title(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    row = listing_event(row, event)
    seq, data = event.envelope.get("seq"), event.envelope.get("data")
    title = data.get("title") if isinstance(data, Mapping) else None
    if (
        type(seq) is int
        and type(title) is str
        and (row.title_seq is None or seq > row.title_seq)
    ):
        row = dataclasses.replace(row, title=title, title_seq=seq)
    return row


LISTING_HANDLERS: Mapping[
    str, Callable[[ListingRow | None, ProjectedEvent], ListingRow]
] = {
    HEADER_TYPE: listing_created,
    "user/message": listing_user_message,
    TITLE_EVENT: listing_title,
}


def fold_listing(row: ListingRow | None, event: ProjectedEvent) -> ListingRow:
    """The listing row after one more event (dispatch on the wire type)."""
    return LISTING_HANDLERS.get(event.type, listing_event)(row, event)


def title_row(row: TitleRow | None, event: ProjectedEvent) -> TitleRow | None:
    seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
    if type(seq) is not int or time is None or (row is not None and row.seq >= seq):
        return None
    return TitleRow(event.session_id, seq, time, event.envelope.get("data"))


def lineage_row(row: LineageRow | None, event: ProjectedEvent) -> LineageRow:
    header = event.header
    return LineageRow(
        event.session_id,
        _text(header.get("parentSession")),
        _number(header.get("createdAt")),
        header,
    )
