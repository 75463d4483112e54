"""Session lineage as a pure algorithm over header records.

See docs/query.md#lineage-trace.

The corpus is reached through two lookups (a record by id, the records whose
``parentSession`` is an id), so the same walk serves a full in-memory list and an
indexed view. Everything is iterative: lineage depth is unbounded (3,000 is tested).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from agentlog.domain.errors import LineageCycleError, SessionNotFoundError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from agentlog.domain.header import Header

R = TypeVar("R")


class LineageCorpus(Protocol[R]):
    """What the walk needs from the corpus; ``header`` maps a record to its header."""

    def record(self, session_id: str) -> R | None: ...

    def children(self, session_id: str) -> Iterable[R]: ...

    def header(self, record: R) -> Header: ...


@dataclass(slots=True)
class LineageNode(Generic[R]):
    """One descendant and its own descendants (oldest first)."""

    record: R
    descendants: list[LineageNode[R]] = field(default_factory=list)


@dataclass(slots=True)
class LineageTrace(Generic[R]):
    """Ancestors immediate-to-outermost, descendant trees, and completeness.

    ``root`` is set when ``complete``; ``unresolved_parent_id`` when not.
    """

    target: R
    ancestors: list[R]
    descendants: list[LineageNode[R]]
    complete: bool
    root: R | None = None
    unresolved_parent_id: str | None = None


def _parent(header: Header) -> str | None:
    parent = header.get("parentSession")
    return parent if isinstance(parent, str) else None


def _order(header: Header) -> tuple[Any, str]:
    created = header.get("createdAt")
    number = created if isinstance(created, int | float) else 0
    return (number, str(header.get("id")))


class IndexedCorpus(Generic[R]):
    """A corpus held in memory: one list, indexed by id and by parent."""

    def __init__(self, records: Iterable[R], header: Callable[[R], Header]) -> None:
        self._header = header
        self._by_id: dict[str, R] = {}
        self._children: defaultdict[str, list[R]] = defaultdict(list)
        for record in records:
            head = header(record)
            self._by_id[str(head.get("id"))] = record
            parent = _parent(head)
            if parent is not None:
                self._children[parent].append(record)

    def record(self, session_id: str) -> R | None:
        return self._by_id.get(session_id)

    def children(self, session_id: str) -> Iterable[R]:
        return self._children.get(session_id, ())

    def header(self, record: R) -> Header:
        return self._header(record)


def trace_lineage(corpus: LineageCorpus[R], session_id: str) -> LineageTrace[R]:
    """Walk parents up from ``session_id`` and children down.

    See docs/query.md#lineage-trace.

    Raises :class:`~agentlog.domain.errors.SessionNotFoundError` for an unknown
    target and :class:`~agentlog.domain.errors.LineageCycleError` when the parent
    walk revisits an id (the query service maps both to its codes).
    """
    target = corpus.record(session_id)
    if target is None:
        raise SessionNotFoundError(session_id)
    ancestors: list[R] = []
    seen = {session_id}
    complete, unresolved = True, None
    parent = _parent(corpus.header(target))
    while parent is not None:
        if parent in seen:
            raise LineageCycleError(parent)
        seen.add(parent)
        record = corpus.record(parent)
        if record is None:
            complete, unresolved = False, parent
            break
        ancestors.append(record)
        parent = _parent(corpus.header(record))
    trace = LineageTrace(
        target=target,
        ancestors=ancestors,
        descendants=_descendants(corpus, session_id),
        complete=complete,
        unresolved_parent_id=unresolved,
    )
    if complete:
        trace.root = ancestors[-1] if ancestors else target
    return trace


def _sorted_children(corpus: LineageCorpus[R], session_id: str) -> list[R]:
    return sorted(corpus.children(session_id), key=lambda r: _order(corpus.header(r)))


def _descendants(corpus: LineageCorpus[R], session_id: str) -> list[LineageNode[R]]:
    """Trees under ``session_id``, built with an explicit stack (no recursion).

    A cycle below the target must contain the target, which the parent walk has
    already refused; the visited set only guards against an inconsistent corpus.
    """
    top: list[LineageNode[R]] = []
    visited = {session_id}
    stack: list[tuple[str, list[LineageNode[R]]]] = [(session_id, top)]
    while stack:
        parent_id, siblings = stack.pop()
        for record in _sorted_children(corpus, parent_id):
            child_id = str(corpus.header(record).get("id"))
            if child_id in visited:
                continue
            visited.add(child_id)
            node = LineageNode(record)
            siblings.append(node)
            stack.append((child_id, node.descendants))
    return top


def walk_nodes(nodes: Sequence[LineageNode[R]]) -> Iterable[tuple[int, LineageNode[R]]]:
    """Every node with its depth (1 = a direct child), pre-order, iteratively."""
    stack = [(1, node) for node in reversed(nodes)]
    while stack:
        depth, node = stack.pop()
        yield depth, node
        stack.extend((depth + 1, child) for child in reversed(node.descendants))
