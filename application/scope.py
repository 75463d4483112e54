"""Scoped reads: which sessions a caller may see, and the read view that enforces it.

A :class:`Scope` constrains immutable header fields (``cwd``, ``owner``, the id).
``SessionQuery.scoped(scope)`` and ``SessionQuery.for_caller(id)`` return a
:class:`ScopedSessionQuery`: the same reads, where a session outside the scope
behaves exactly like a missing one. The visibility check itself sits at the
query's resolution points (``SessionQuery._live``, ``_require_stored``,
``_observe``, the listing and lineage reads), so every read passes it on the
header it then reads; this module holds the rule, the filter intersection, the
lineage corpus that stops at unseen sessions, and the output shaping that keeps
unseen ids out of what is returned. See docs/scope.md.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from agentlog.application.search_models import SessionFilter
from agentlog.domain.errors import SessionQueryError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agentlog.application.query import SessionQuery
    from agentlog.application.query_models import (
        SessionEventRecord,
        SessionEventTrace,
        SessionEventWindow,
        SessionLineageNode,
        SessionLineageTrace,
        SessionRecord,
        SessionSummaryPage,
        SessionSurfaceSnapshot,
    )
    from agentlog.application.search_models import SearchEventPage, SearchSessionPage
    from agentlog.application.surface_stream import SurfaceStream
    from agentlog.domain.header import Header
    from agentlog.domain.lineage import LineageCorpus
    from agentlog.domain.title import TitleSnapshot

R = TypeVar("R")


class Unconstrained(enum.Enum):
    """The type of :data:`ANY`: a scope field that admits every value."""

    ANY = "ANY"

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = Unconstrained.ANY
"""A scope field left open (the default of every field)."""

Constraint = str | None | Unconstrained


def _value(header: Header, key: str) -> object:
    """A header's value for a scope field; an absent key and ``null`` are ``None``."""
    return header.get(key)


def _holds(wanted: Constraint, value: object) -> bool:
    if wanted is ANY:
        return True
    if wanted is None:
        return value is None
    return type(value) is str and value == wanted


@dataclass(frozen=True, slots=True)
class Scope:
    """Which sessions a reader may see, by immutable header fields.

    Each field is :data:`ANY` (no constraint, the default), a string (the header
    must hold exactly that string) or ``None`` (the header must not hold the key).
    ``session_id`` narrows the scope to one session (a caller without a ``cwd``
    sees only itself). A header value of another type never matches a
    constraint: deny by default.
    """

    cwd: Constraint = ANY
    owner: Constraint = ANY
    session_id: str | Unconstrained = ANY

    def __post_init__(self) -> None:
        for name in ("cwd", "owner", "session_id"):
            value = getattr(self, name)
            if value is ANY or type(value) is str:
                continue
            if value is None and name != "session_id":
                continue
            kind = (
                "a string or ANY" if name == "session_id" else "a string, None or ANY"
            )
            msg = f"{name} must be {kind}, got {type(value).__name__}"
            raise SessionQueryError.invalid_scope(msg)

    @classmethod
    def of_caller(cls, header: Header) -> Scope:
        """The scope of a caller session with this header (docs/scope.md#caller-scope).

        Its ``cwd`` and its ``owner`` (absent: sessions without one); without a
        string ``cwd``, or with an ``owner`` that is not a string, only itself.
        """
        cwd, owner = header.get("cwd"), header.get("owner")
        if type(cwd) is str and (owner is None or type(owner) is str):
            return cls(cwd=cwd, owner=owner)
        return cls(session_id=str(header.get("id")))

    def admits(self, header: Header) -> bool:
        """Whether a session with this header is inside the scope."""
        return (
            _holds(self.session_id, _value(header, "id"))
            and _holds(self.cwd, _value(header, "cwd"))
            and _holds(self.owner, _value(header, "owner"))
        )

    def columns(self) -> list[tuple[str, str | None]]:
        """The listing view's ``(column, value)`` equalities (``None``: NULL).

        A view pre-selects with them in its query; the exact rule is
        :meth:`admits`, applied to every row the view returns.
        """
        pairs = (
            ("session_id", self.session_id),
            ("cwd", self.cwd),
            ("owner", self.owner),
        )
        return [(name, value) for name, value in pairs if value is not ANY]

    def session_filter(
        self, wanted: SessionFilter, visible: Callable[[list[str]], set[str]]
    ) -> SessionFilter:
        """``wanted`` intersected with the scope, before any index sees it.

        ``visible(ids)`` says which of these ids the scope can see; a ``parent``
        the scope cannot see is dropped from the filter (so it matches nothing,
        exactly as an id that never existed).
        """
        changes: dict[str, Any] = {}
        for name, value in (
            ("ids", self.session_id),
            ("cwd", self.cwd),
            ("owner", self.owner),
        ):
            if value is ANY:
                continue
            given = getattr(wanted, name)
            changes[name] = (value,) if given is None or value in given else ()
        if wanted.parent is not None:
            named = [p for p in wanted.parent if p is not None]
            seen = visible(named) if named else set()
            changes["parent"] = tuple(
                p for p in wanted.parent if p is None or p in seen
            )
        return wanted.model_copy(update=changes)


class ScopedCorpus(Generic[R]):
    """A lineage corpus in which sessions outside the scope do not exist.

    The walk then stops at an unseen parent exactly as at a missing one, and
    never descends into an unseen child (nor below it).
    """

    def __init__(self, corpus: LineageCorpus[R], scope: Scope) -> None:
        self._corpus = corpus
        self._scope = scope

    def record(self, session_id: str) -> R | None:
        record = self._corpus.record(session_id)
        if record is None or not self._scope.admits(self._corpus.header(record)):
            return None
        return record

    def children(self, session_id: str) -> Iterable[R]:
        return [
            record
            for record in self._corpus.children(session_id)
            if self._scope.admits(self._corpus.header(record))
        ]

    def header(self, record: R) -> Header:
        return self._corpus.header(record)


# ------------------------------------------------------------------ the view


def _parent(header: Header) -> str | None:
    parent = header.get("parentSession")
    return parent if type(parent) is str else None


class ScopedSessionQuery:
    """The reads of :class:`~agentlog.application.query.SessionQuery`, inside a scope.

    A session outside the scope is missing: every read of it raises
    ``SESSION_QUERY_SESSION_NOT_FOUND`` with the message a never-existing id
    gets, at the same step; listings, filters and searches never return it;
    lineage stops where it would begin. A ``parentSession`` naming a session the
    scope cannot see (out of scope or missing alike) is left out of every header
    returned, and a lineage trace that stops there says ``complete: false``
    without an ``unresolvedParentId``. Built by ``SessionQuery.scoped`` and
    ``SessionQuery.for_caller``; it reads through the reader the query had
    mounted when it was built. See docs/scope.md.
    """

    def __init__(self, query: SessionQuery, scope: Scope) -> None:
        self._query = query
        self._scope = scope

    @property
    def scope(self) -> Scope:
        return self._scope

    # ------------------------------------------------------------- shaping

    def _unseen(self, headers: Iterable[Header]) -> set[str]:
        """The parents these headers name that the scope cannot see."""
        parents = {p for header in headers if (p := _parent(header)) is not None}
        if not parents:
            return set()
        return parents - self._query._visible_ids(sorted(parents))

    @staticmethod
    def _withhold(header: dict[str, Any], unseen: set[str]) -> None:
        if _parent(header) in unseen:
            del header["parentSession"]

    def _records(self, records: list[SessionRecord]) -> list[SessionRecord]:
        unseen = self._unseen(record.header for record in records)
        for record in records:
            self._withhold(record.header, unseen)
        return records

    def _session(self, header: dict[str, Any]) -> dict[str, Any]:
        self._withhold(header, self._unseen([header]))
        return header

    def _filter(self, wanted: object) -> object:
        """A session filter with the scope in it (anything else is refused later,
        by the same check and message as an unscoped query's)."""
        if wanted is None:
            wanted = SessionFilter()
        if not isinstance(wanted, SessionFilter):
            return wanted
        return self._scope.session_filter(wanted, self._query._visible_ids)

    # --------------------------------------------------------------- reads

    def list_sessions(self) -> list[SessionRecord]:
        return self._records(self._query.list_sessions())

    def list_summaries(
        self, limit: int | None = None, *, cursor: str | None = None, offset: int = 0
    ) -> SessionSummaryPage:
        """``limit`` ``None``: the query's default page size."""
        query = self._query
        page = (
            query.list_summaries(cursor=cursor, offset=offset)
            if limit is None
            else query.list_summaries(limit, cursor=cursor, offset=offset)
        )
        unseen = self._unseen(item.header for item in page.items)
        for item in page.items:
            self._withhold(item.header, unseen)
            if item.parent_session in unseen:
                item.parent_session = None
        return page

    def read_title(self, session_id: str) -> TitleSnapshot | None:
        return self._query.read_title(session_id)

    def list_events(self, session_id: str) -> list[SessionEventRecord]:
        return self._query.list_events(session_id)

    def read_surface(
        self, session_id: str, *, at: object = None
    ) -> SessionSurfaceSnapshot:
        snapshot = self._query.read_surface(session_id, at=at)
        self._session(snapshot.session)
        return snapshot

    def read_messages(
        self, session_id: str, *, at: object = None
    ) -> list[dict[str, Any]]:
        return self._query.read_messages(session_id, at=at)

    def stream_surface(self, session_id: str, *, at: object = None) -> SurfaceStream:
        stream = self._query.stream_surface(session_id, at=at)
        header = self._session(dict(stream.session))
        return dataclasses.replace(stream, session=header)

    def read_event(
        self, session_id: str, seq: object, before: object = 0, after: object = 0
    ) -> SessionEventWindow:
        window = self._query.read_event(session_id, seq, before, after)
        self._session(window.session)
        return window

    def trace_event(self, session_id: str, seq: object) -> SessionEventTrace:
        return self._query.trace_event(session_id, seq)

    def trace_session(self, session_id: str) -> SessionLineageTrace:
        trace = self._query.trace_session(session_id)
        trace.unresolved_parent_id = None
        records = [trace.target, *trace.ancestors]
        if trace.root is not None:
            records.append(trace.root)
        stack: list[SessionLineageNode] = list(trace.descendants)
        while stack:
            node = stack.pop()
            records.append(node.session)
            stack.extend(node.descendants)
        self._records(records)
        return trace

    def filter_sessions(self, session_filter: object = None) -> list[SessionRecord]:
        return self._records(self._query.filter_sessions(self._filter(session_filter)))

    def filter_events(
        self, session_id: str, event_filter: object = None
    ) -> list[SessionEventRecord]:
        return self._query.filter_events(session_id, event_filter)

    def search_sessions(self, query: object, **options: Any) -> SearchSessionPage:
        options["session_filter"] = self._filter(options.get("session_filter"))
        return self._query.search_sessions(query, **options)

    def search_events(
        self, session_id: str, query: object, **options: Any
    ) -> SearchEventPage:
        return self._query.search_events(session_id, query, **options)


__all__ = ["ANY", "Scope", "ScopedCorpus", "ScopedSessionQuery", "Unconstrained"]
