"""The query service's outputs: pydantic models whose JSON is the spec's shapes.

Every model is a fresh, mutable copy (callers may change it freely); JSON keys are
camelCase as in docs/query.md, and optional keys are omitted, never null.
Also the small shared helpers that build records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from agentlog.domain.header import HEADER_KEYS, Header
from agentlog.domain.json import copy_json
from agentlog.domain.json_model import JsonModel
from agentlog.domain.title import TitleSnapshot

if TYPE_CHECKING:
    from agentlog.application.summaries import SummaryPage
    from agentlog.domain.json import Json

SessionTitleSnapshot = TitleSnapshot
SurfaceClass = Literal["current", "shadowed", "log-only"]
CONFLICT_FIELDS = tuple(key for key in HEADER_KEYS if key != "delegationDepth")
"""Compared live vs persisted and listed vs loaded: every header key but
``delegationDepth``."""
_ABSENT = object()

# ------------------------------------------------------------------ outputs


class QueryModel(JsonModel):
    """An output: a fresh mutable copy; only the listed keys are omitted when None."""

    omit_when_none: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> Json:
        """The spec's JSON shape (what ``--json`` prints), at any nesting depth.

        Built field by field rather than by ``model_dump``: pydantic's serialiser
        recurses and fails past a few hundred levels, and a session's data may be
        20,000 deep. JSON-valued fields are copied with the domain's iterative
        codec; nested models use their own ``to_json``.
        """
        out: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None and name in self.omit_when_none:
                continue
            out[field.serialization_alias or field.alias or name] = _to_json(value)
        return out


def _to_json(value: Any) -> Json:
    if isinstance(value, QueryModel | TitleSnapshot):
        return value.to_json()
    if type(value) is list and any(isinstance(item, QueryModel) for item in value):
        return [_to_json(item) for item in value]
    return copy_json(value)


class SessionRecord(QueryModel):
    """``{header, live, persisted}``: exactly these keys (scenario 101)."""

    header: dict[str, Any]
    live: bool
    persisted: bool


class SessionSummary(QueryModel):
    """A listing row: header fields plus what the log says (seed 001's summary)."""

    omit_when_none = frozenset(
        {"title", "first_prompt", "parent_session", "cwd", "owner"}
    )

    id: str
    created_at: Any
    updated_at: Any
    event_count: int
    title: str | None = None
    first_prompt: str | None = None
    parent_session: str | None = None
    cwd: str | None = None
    owner: str | None = None
    live: bool
    persisted: bool
    header: dict[str, Any]


class SessionSummaryPage(QueryModel):
    """One page of summaries; ``nextCursor`` continues after its last row."""

    items: list[SessionSummary]
    next_cursor: str | None = None

    @classmethod
    def of(cls, page: SummaryPage) -> SessionSummaryPage:
        """The models of a page of plain listing rows (the same JSON)."""
        # One validation of the whole page: pydantic-core builds the fifty
        # rows in Rust, without a Python ``__init__`` each (W3,
        # docs/performance.md); faster still than ``model_construct``.
        items = [
            {
                "id": row.id,
                "created_at": row.created_at,
                "updated_at": row.updated_at,
                "event_count": row.event_count,
                "title": row.title,
                "first_prompt": row.first_prompt,
                "parent_session": row.parent_session,
                "cwd": row.cwd,
                "owner": row.owner,
                "live": row.live,
                "persisted": row.persisted,
                "header": row.header,
            }
            for row in page.items
        ]
        return cls.model_validate({"items": items, "next_cursor": page.next_cursor})


class SessionEventRecord(QueryModel):
    """One event's place: ``current``, ``shadowed`` or ``log-only``."""

    session_id: str
    seq: int
    type: str
    time: Any
    surface: SurfaceClass


class SessionSurfaceSnapshot(QueryModel):
    """The current surface in model-history order, with its capture boundary."""

    session: dict[str, Any]
    captured_through_seq: int | None
    events: list[dict[str, Any]]


class SessionEventWindow(QueryModel):
    """A target event and the raw events ``startSeq..endSeq`` around it."""

    session: dict[str, Any]
    target: dict[str, Any]
    events: list[dict[str, Any]]
    start_seq: int
    end_seq: int


class SessionLineageNode(QueryModel):
    """A descendant and its own descendants, oldest first."""

    session: SessionRecord
    descendants: list[SessionLineageNode]


class SessionLineageTrace(QueryModel):
    """Ancestors immediate-to-outermost, descendant trees, and completeness.

    Trees may be thousands deep, beyond pydantic's serialiser: use ``to_json``.
    """

    omit_when_none = frozenset({"root", "unresolved_parent_id"})

    target: SessionRecord
    ancestors: list[SessionRecord]
    descendants: list[SessionLineageNode]
    complete: bool
    root: SessionRecord | None = None
    unresolved_parent_id: str | None = None

    def to_json(self) -> Json:
        """Iterative, so a 3,000-deep chain serialises."""
        out: dict[str, Any] = {
            "target": self.target.to_json(),
            "ancestors": [record.to_json() for record in self.ancestors],
            "descendants": [],
            "complete": self.complete,
        }
        if self.root is not None:
            out["root"] = self.root.to_json()
        if self.unresolved_parent_id is not None:
            out["unresolvedParentId"] = self.unresolved_parent_id
        stack = [(self.descendants, out["descendants"])]
        while stack:
            nodes, sink = stack.pop()
            for node in nodes:
                item = {"session": node.session.to_json(), "descendants": []}
                sink.append(item)
                stack.append((node.descendants, item["descendants"]))
        return out


class SessionEventTrace(QueryModel):
    """Direct positional replacement and direct provenance of one event."""

    omit_when_none = frozenset({"replaced_by"})

    target: SessionEventRecord
    replaced_by: int | None = None
    replacement_chain: list[int]
    replaced_event_seqs: list[int]
    source_event_seqs: list[int]
    derived_event_seqs: list[int]


# ---------------------------------------------------------------- helpers


def headers_conflict(first: Header, second: Header) -> bool:
    """Whether two headers of one id disagree on an immutable field.

    See docs/query.md#live-and-persisted.
    """
    return any(
        first.get(key, _ABSENT) != second.get(key, _ABSENT) for key in CONFLICT_FIELDS
    )


def make_record(header: Header, *, live: bool, persisted: bool) -> SessionRecord:
    return SessionRecord(header=copy_json(dict(header)), live=live, persisted=persisted)
