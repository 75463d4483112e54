"""Lineage over the stored views with live sessions overlaid, for ``trace_session``;
and the conversion of a pure trace into output models (iterative: 3,000 deep)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from agentlog.application.query_models import (
    SessionLineageNode,
    SessionLineageTrace,
    SessionRecord,
    headers_conflict,
    make_record,
)
from agentlog.domain.errors import SessionQueryError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlog.application.handle import SessionHandle
    from agentlog.application.store_reader import StoreReader
    from agentlog.domain.header import Header
    from agentlog.domain.lineage import LineageTrace


class StoreLineageCorpus:
    """Live sessions overlaid on the stored lineage view (for ``trace_session``).

    The stored ancestry and subtree of the target come in two reads; only a
    node reached through a live-only session costs a read of its own.
    """

    def __init__(
        self, reader: StoreReader, live: Sequence[SessionHandle], target: str
    ) -> None:
        self.reader = reader
        self.live = {handle.id: handle.header for handle in live}
        self.live_children: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for header in self.live.values():
            parent = header.get("parentSession")
            if isinstance(parent, str):
                self.live_children[parent].append(header)
        # One read for the stored headers of every live id, not one per node.
        rows = self._listed(lambda: reader.rows(list(self.live)))
        self.live_listed = {key: row.header for key, row in rows.items()}
        ancestry, subtree = self._listed(lambda: reader.lineage(target))
        self.stored = {str(head.get("id")): head for head in ancestry + subtree}
        self.stored_children: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for head in subtree:
            self.stored_children[str(head.get("parentSession"))].append(head)
        # The subtree read is transitive: these ids' stored children are all known.
        self.expanded = {target} | {str(head.get("id")) for head in subtree}

    def _listed(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as error:
            raise SessionQueryError.listing_failed(error) from error

    def _overlay(self, header: Header, listed: Header | None) -> SessionRecord:
        session_id = str(header.get("id"))
        live = self.live.get(session_id)
        if live is None:
            return make_record(header, live=False, persisted=True)
        if listed is not None and headers_conflict(live, listed):
            raise SessionQueryError.source_conflict(session_id)
        return make_record(live, live=True, persisted=listed is not None)

    def record(self, session_id: str) -> SessionRecord | None:
        if session_id in self.live:
            listed = self.live_listed.get(session_id)
            return self._overlay(self.live[session_id], listed)
        listed = self.stored.get(session_id)
        if listed is None:
            listed = self._listed(
                lambda: self.reader.lookup(session_id, catch_up=False)
            )
        return (
            None if listed is None else make_record(listed, live=False, persisted=True)
        )

    def children(self, session_id: str) -> list[SessionRecord]:
        if session_id in self.expanded:
            stored = self.stored_children.get(session_id, [])
        else:
            stored = self._listed(lambda: self.reader.children(session_id))
        found = {str(h.get("id")): self._overlay(h, h) for h in stored}
        for header in self.live_children.get(session_id, ()):
            key = str(header.get("id"))
            if key not in found:
                found[key] = self._overlay(header, self.live_listed.get(key))
        return list(found.values())

    def header(self, record: SessionRecord) -> Header:
        return record.header


def lineage_model(trace: LineageTrace[SessionRecord]) -> SessionLineageTrace:
    """Models from the pure trace, built iteratively; every record is distinct."""
    top: list[SessionLineageNode] = []
    stack = [(trace.descendants, top)]
    while stack:
        nodes, sink = stack.pop()
        for node in nodes:
            model = SessionLineageNode.model_construct(
                session=node.record, descendants=[]
            )
            sink.append(model)
            stack.append((node.descendants, model.descendants))
    root = None if trace.root is None else trace.root.model_copy(deep=True)
    return SessionLineageTrace.model_construct(
        target=trace.target,
        ancestors=trace.ancestors,
        descendants=top,
        complete=trace.complete,
        root=root,
        unresolved_parent_id=trace.unresolved_parent_id,
    )
