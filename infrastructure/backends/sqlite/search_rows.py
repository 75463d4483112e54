"""Reading the SQLite search index's document rows: labels back to session ids,
type codes back to names, and a query's event filter and session sets as SQL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.application.search_index import SURFACES, IndexedDocument
from agentlog.application.search_match import seq_bound, time_bound
from agentlog.infrastructure.backends.sqlite.search_index_writes import TYPES
from agentlog.infrastructure.backends.sqlite.session_labels import LABELS
from agentlog.infrastructure.views import decode_text, encode_text

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from eventsourcing.sqlite import SQLiteCursor

    from agentlog.application.search_index import IndexQuery

IDS = "temp.agentlog_search_ids"
"""The session sets of one query (``allowed`` 1: only these; 0: not these)."""
SESSION_OF = f"SELECT session_id FROM {LABELS} WHERE label = ?"
LABELS_OF_IDS = (
    f"SELECT s2.label FROM {IDS} AS i JOIN {LABELS} AS s2 ON s2.session_id = i.id"
)


class LabelledRows:
    """Rows that carry a session's label made documents, each label's session
    id read once, when a row is made: a band's sort needs no ids, and a page
    makes a few dozen of its rows."""

    def __init__(self, cursor: Any, types: Mapping[int, str]) -> None:
        self._cursor = cursor  # its own: a read of rows may be open
        self._types = types
        self._known: dict[int, bytes] = {}

    def document(self, record: Sequence[Any]) -> IndexedDocument:
        label = record[0]
        if label not in self._known:
            self._cursor.execute(SESSION_OF, (label,))
            self._known[label] = self._cursor.fetchone()[0]
        return document_of((self._known[label], *record[1:]), self._types)


def document_of(record: Sequence[Any], types: Mapping[int, str]) -> IndexedDocument:
    session_id, neg_seq, flags, doc_tokens, neg_time, doc_id, _ = record
    return IndexedDocument(
        decode_text(session_id),
        -neg_seq,
        types[flags >> 3],
        SURFACES[flags >> 1 & 3],
        doc_tokens,
        float(neg_time),
        doc_id,
    )


def filter_clauses(query: IndexQuery, params: list[Any]) -> list[str]:
    """The event filter's columns and the session sets as SQL (``params`` grows)."""
    wanted = query.wanted
    where: list[str] = []
    if wanted.seq_from is not None:
        where.append("d.neg_seq <= ?")
        params.append(seq_bound(-wanted.seq_from))
    if wanted.seq_to is not None:
        where.append("d.neg_seq >= ?")
        params.append(seq_bound(-wanted.seq_to))
    if wanted.time_from is not None or wanted.time_to is not None:
        where.append("d.flags & 1")
    if wanted.time_from is not None:
        where.append("-d.neg_time >= ?")
        params.append(time_bound(wanted.time_from))
    if wanted.time_to is not None:
        where.append("-d.neg_time <= ?")
        params.append(time_bound(wanted.time_to))
    if wanted.types is not None:
        marks = ", ".join("?" for _ in wanted.types)
        where.append(
            f"d.flags >> 3 IN (SELECT code FROM {TYPES} WHERE type IN ({marks}))"
        )
        params += [encode_text(kind) for kind in wanted.types]
    if wanted.surfaces is not None:
        codes = sorted({SURFACES.index(surface) for surface in wanted.surfaces})
        where.append(f"d.flags >> 1 & 3 IN ({', '.join(str(code) for code in codes)})")
    if query.snapshot is not None:
        where.append("d.number <= ?")
        params.append(query.snapshot)
    if query.sessions is not None:
        where.append(f"d.label IN ({LABELS_OF_IDS} WHERE i.allowed = 1)")
    if query.excluded:
        where.append(f"d.label NOT IN ({LABELS_OF_IDS} WHERE i.allowed = 0)")
    return where


def type_names(c: SQLiteCursor) -> dict[int, str]:
    """Every type code (a handful), read with the rows that use them."""
    c.execute(f"SELECT code, type FROM {TYPES}")
    return {int(code): decode_text(kind) for code, kind in c.fetchall()}
