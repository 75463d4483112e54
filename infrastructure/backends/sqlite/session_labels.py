"""Order-preserving integer labels for session ids (SQLite search index).

The search order breaks ties by session id. Storing the id in every document
row and in both of its indexes cost three copies of it per document (a
36-character UUID is more than the rest of the row). Each session instead gets a
*label*, an integer with ``a < b`` exactly when ``id_a < id_b``, stored once in
:data:`LABELS`; document rows and the order index hold the label, so SQL still
sorts and seeks by the exact order key.

A new id takes a label between its neighbours'. Labels are spaced :data:`GAP`
apart at the ends (ids that only grow, such as UUIDv7 or counters, never run out
of room), halved between neighbours; when two neighbours are adjacent integers,
the labels of a window of sessions around the new id are spread evenly (the
window doubles until it is sparse enough, or reaches an end, beyond which room
is unbounded), and the moved sessions' document rows are updated in the same
transaction. Every label changes only inside the write transaction of a catch-up,
so a reader sees one consistent labelling; cursors carry session ids, never
labels (:func:`label_bound`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agentlog.application.search_match import SEQ_MAX, SEQ_MIN
from agentlog.infrastructure.views import encode_text

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from eventsourcing.sqlite import SQLiteCursor

LABELS: Final = "agentlog_search_v5_sessions"
GAP: Final = 1024
"""Room left after the last label (and before the first): small enough that
labels of many thousands of sessions fit in three or four bytes, large enough
that ten inserts between the same two neighbours fit before a respread."""
SPARSE: Final = 64
"""A window is respread only if its sessions can be at least this far apart
(room for six more halvings each)."""

TABLE_STATEMENT: Final = (
    f"CREATE TABLE IF NOT EXISTS {LABELS} ("
    "session_id BLOB PRIMARY KEY, label INTEGER NOT NULL UNIQUE) WITHOUT ROWID"
)


def label_of(
    c: SQLiteCursor,
    session_id: str,
    docs_table: str,
    known: MutableMapping[str, int],
) -> int:
    """The session's label, given one between its neighbours' if it has none.

    ``known`` caches labels within one transaction; it is cleared when a
    respread moves labels.
    """
    if session_id in known:
        return known[session_id]
    key = encode_text(session_id)
    c.execute(f"SELECT label FROM {LABELS} WHERE session_id = ?", (key,))
    row = c.fetchone()
    if row is not None:
        known[session_id] = int(row[0])
        return known[session_id]
    while True:
        low = _neighbours(c, key, before=True, count=1)
        high = _neighbours(c, key, before=False, count=1)
        label = _between(low[0][1] if low else None, high[0][1] if high else None)
        if label is not None:
            break
        _respread(c, key, docs_table)
        known.clear()
    c.execute(f"INSERT INTO {LABELS} (session_id, label) VALUES (?, ?)", (key, label))
    known[session_id] = label
    return label


def forget_label(c: SQLiteCursor, session_id: str) -> None:
    """Drop the session's id and label (its documents are gone)."""
    c.execute(f"DELETE FROM {LABELS} WHERE session_id = ?", (encode_text(session_id),))


def label_bound(c: SQLiteCursor, session_id: str, neg_seq: int) -> tuple[int, int]:
    """``(label, -seq)`` that compares with every stored ``(label, neg_seq)``
    as ``(session_id, -seq)`` compares with the stored ``(id, -seq)``.

    The session may have no label (erased, or never indexed): the bound then
    sits after every document of the nearest lower id.
    """
    c.execute(
        f"SELECT session_id, label FROM {LABELS} WHERE session_id <= ? "
        "ORDER BY session_id DESC LIMIT 1",
        (encode_text(session_id),),
    )
    row = c.fetchone()
    if row is None:
        return SEQ_MIN, SEQ_MAX
    if bytes(row[0]) == encode_text(session_id):
        return int(row[1]), neg_seq
    return int(row[1]), SEQ_MAX


def _between(low: int | None, high: int | None) -> int | None:
    if low is None and high is None:
        return 0
    if high is None:
        assert low is not None
        return low + GAP
    if low is None:
        return high - GAP
    if high - low < 2:
        return None
    return low + min(GAP, (high - low) // 2)


def _neighbours(
    c: SQLiteCursor, key: bytes, *, before: bool, count: int
) -> list[tuple[bytes, int]]:
    """Up to ``count`` labelled sessions next to ``key``, nearest first."""
    op, order = ("<", "DESC") if before else (">", "ASC")
    c.execute(
        f"SELECT session_id, label FROM {LABELS} WHERE session_id {op} ? "
        f"ORDER BY session_id {order} LIMIT ?",
        (key, count),
    )
    return [(bytes(row[0]), int(row[1])) for row in c.fetchall()]


def _respread(c: SQLiteCursor, key: bytes, docs_table: str) -> None:
    """Spread the labels around ``key`` so a label fits beside it."""
    width = 1
    while True:
        width *= 2
        before = _neighbours(c, key, before=True, count=width)
        after = _neighbours(c, key, before=False, count=width)
        # A full side keeps its farthest session fixed as the bound; a short
        # side reached the end of the labels, and room beyond it is unbounded.
        moved = before[: width - 1][::-1] + after[: width - 1]
        slots = len(moved) + 2  # the gaps: one more than the sessions, + the new id
        labels = [label for _, label in before + after]
        low = before[-1][1] if len(before) == width else min(labels) - GAP * slots
        high = after[-1][1] if len(after) == width else max(labels) + GAP * slots
        step = (high - low) // slots
        if step >= SPARSE:
            break
    gap_at = len(before[: width - 1])  # the new id goes after this many moved
    targets = [
        low + step * (i + 1 + (1 if i >= gap_at else 0)) for i in range(len(moved))
    ]
    _move(c, list(zip(moved, targets, strict=True)), docs_table)


def _move(
    c: SQLiteCursor, moves: list[tuple[tuple[bytes, int], int]], docs_table: str
) -> None:
    """Relabel sessions keeping every label unique at every step: those moving
    down in ascending order, those moving up in descending order."""
    down = [(old, new, sid) for (sid, old), new in moves if new < old]
    up = [(old, new, sid) for (sid, old), new in moves if new > old]
    for old, new, sid in sorted(down) + sorted(up, reverse=True):
        c.execute(f"UPDATE {LABELS} SET label = ? WHERE session_id = ?", (new, sid))
        c.execute(f"UPDATE {docs_table} SET label = ? WHERE label = ?", (new, old))
