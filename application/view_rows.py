"""The rows of the read models, and how a session's log lines change each of them.

Pure: a row is a frozen dataclass keyed by session id; a fold takes the current
row (or ``None``) and the session's new events and returns the new row. The
listing folds are idempotent (maxima, the lowest prompt seq, the highest title
seq), so folding an event twice never changes a row.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentlog.domain.title_text import (
    TITLE_EVENT,
    is_eligible_message,
    message_text,
    normalize_title,
)

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope

HEADER_TYPE = "session"
"""The stored topic (and ``type``) of the created event that carries the header."""
ERASED_TYPE = "session-erased"
"""The stored topic (and projected type) of an erased session's tombstone: every
view drops the session's rows when it reaches one (docs/erasure.md)."""
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


@dataclass(slots=True)
class ListingRow:
    """One session in the listing: header fields and what the log says so far.

    Not frozen, though nothing changes one after it is built: a frozen
    dataclass sets each of its twelve fields through ``object.__setattr__``,
    which made building a page's rows cost more than reading them (W3,
    docs/performance.md).
    """

    session_id: str
    header: dict[str, Any] | None = None
    created_at: Number | None = None
    parent_session: str | None = None
    cwd: str | None = None
    owner: str | None = None
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
        "owner": "text",
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
# A listing fold updates a *draft* (a dict of the row's fields) in place: a
# batch builds each touched row once instead of copying a frozen row per event.

Draft = dict[str, Any]


def listing_created(draft: Draft, event: ProjectedEvent) -> None:
    header = event.header
    created_at = _number(header.get("createdAt"))
    draft["header"] = header
    draft["created_at"] = created_at
    draft["parent_session"] = _text(header.get("parentSession"))
    draft["cwd"] = _text(header.get("cwd"))
    draft["owner"] = _text(header.get("owner"))
    if draft["updated_at"] is None:
        draft["updated_at"] = created_at


def listing_event(draft: Draft, event: ProjectedEvent) -> None:
    """Any log event: the count and the updated time move forward."""
    seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
    if type(seq) is int and seq + 1 > draft["event_count"]:
        draft["event_count"] = seq + 1
    updated = draft["updated_at"]
    if time is not None and (updated is None or time > updated):
        draft["updated_at"] = time


def listing_user_message(draft: Draft, event: ProjectedEvent) -> None:
    listing_event(draft, event)
    seq, first = event.envelope.get("seq"), draft["first_prompt_seq"]
    if (
        type(seq) is int
        and (first is None or seq < first)
        and is_eligible_message(event.envelope)
    ):
        text = message_text(event.envelope)
        draft["first_prompt"] = normalize_title(text, FIRST_PROMPT_MAX_BYTES)
        draft["first_prompt_seq"] = seq


def listing_title(draft: Draft, event: ProjectedEvent) -> None:
    listing_event(draft, event)
    seq, data = event.envelope.get("seq"), event.envelope.get("data")
    title = data.get("title") if isinstance(data, Mapping) else None
    latest = draft["title_seq"]
    if type(seq) is int and type(title) is str and (latest is None or seq > latest):
        draft["title"] = title
        draft["title_seq"] = seq


LISTING_HANDLERS: Mapping[str, Callable[[Draft, ProjectedEvent], None]] = {
    HEADER_TYPE: listing_created,
    "user/message": listing_user_message,
    TITLE_EVENT: listing_title,
}
_LISTING_FIELDS = tuple(f.name for f in dataclasses.fields(ListingRow))


def fold_listing(
    row: ListingRow | None, events: Iterable[ProjectedEvent], session_id: str
) -> ListingRow:
    """The listing row after these events (dispatch on each wire type)."""
    row = row or ListingRow(session_id)
    draft = {name: getattr(row, name) for name in _LISTING_FIELDS}
    for event in events:
        LISTING_HANDLERS.get(event.type, listing_event)(draft, event)
    return ListingRow(**draft)


def fold_title(
    row: TitleRow | None, events: Iterable[ProjectedEvent], session_id: str
) -> TitleRow | None:
    """The latest title event wins; ``None`` when nothing newer arrived."""
    latest = None
    for event in events:
        seq, time = event.envelope.get("seq"), _number(event.envelope.get("time"))
        if type(seq) is int and time is not None and (row is None or seq > row.seq):
            row = latest = TitleRow(session_id, seq, time, event.envelope.get("data"))
    return latest


def fold_lineage(
    row: LineageRow | None, events: Iterable[ProjectedEvent], session_id: str
) -> LineageRow | None:
    """The parent link of the created event (the header never changes)."""
    for event in events:
        header = event.header
        row = LineageRow(
            session_id,
            _text(header.get("parentSession")),
            _number(header.get("createdAt")),
            header,
        )
    return row
