"""Order-preserving session labels of the SQLite search index: labels sort as
the ids do after any insertion order, document rows follow every respread, and
a cursor's session (stored or not) bounds labels as its id bounds ids."""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.infrastructure.backends.sqlite.session_labels import (
    LABELS,
    TABLE_STATEMENT,
    forget_label,
    label_bound,
    label_of,
)
from agentlog.infrastructure.views import encode_text

DOCS = "docs"
IDS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from(["\ud800", "\udfff", "\x00"]),
    min_size=0,
    max_size=6,
)


class Store:
    """A labels table and a documents table with a row per session."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.c: Any = self.db.cursor()
        self.c.execute(TABLE_STATEMENT)
        self.c.execute(f"CREATE TABLE {DOCS} (label INTEGER NOT NULL, sid BLOB)")
        self.c.execute(f"CREATE INDEX {DOCS}_label ON {DOCS} (label)")
        self.updates = 0

    def add(self, session_id: str) -> int:
        before = self.db.total_changes
        known: dict[str, int] = {}
        label = label_of(self.c, session_id, DOCS, known)
        self.updates += self.db.total_changes - before - 1
        self.c.execute(
            f"INSERT INTO {DOCS} VALUES (?, ?)", (label, encode_text(session_id))
        )
        return label

    def labels(self) -> list[tuple[bytes, int]]:
        self.c.execute(f"SELECT session_id, label FROM {LABELS} ORDER BY session_id")
        return [(bytes(sid), label) for sid, label in self.c.fetchall()]

    def check(self) -> None:
        rows = self.labels()
        labels = [label for _, label in rows]
        assert labels == sorted(labels) and len(set(labels)) == len(labels)
        self.c.execute(f"SELECT label, sid FROM {DOCS}")
        docs = {bytes(sid): label for label, sid in self.c.fetchall()}
        assert docs == dict(rows)


@pytest.fixture
def store() -> Iterator[Store]:
    made = Store()
    with closing(made.db):
        yield made


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(IDS, unique=True, max_size=60))
def test_labels_sort_as_ids_whatever_the_insertion_order(ids: list[str]) -> None:
    store = Store()
    with closing(store.db):
        for session_id in ids:
            store.add(session_id)
        store.check()
        if ids:
            labels = store.labels()
            assert (
                label_of(store.c, ids[0], DOCS, {}) == dict(labels)[encode_text(ids[0])]
            )
            assert store.labels() == labels


@pytest.mark.parametrize(
    "pattern", ["ascending", "descending", "between", "before-top", "random"]
)
def test_adversarial_orders_respread_little(store: Store, pattern: str) -> None:
    n = 3000
    if pattern == "ascending":
        ids = [f"s{i:06}" for i in range(n)]
    elif pattern == "descending":
        ids = [f"s{i:06}" for i in reversed(range(n))]
    elif pattern == "between":
        # Each new id falls just above the last, under one fixed neighbour: the
        # gap halves on every insert.
        ids = ["a", "b"] + ["a" + "m" * k for k in range(1, n)]
    elif pattern == "before-top":
        # Growing ids (UUIDv7-like) under one high id that exists from the start.
        ids = ["zzzz"] + [f"{i:08x}" for i in range(n)]
    else:
        rng = random.Random(7)
        ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n)]
    for session_id in ids:
        store.add(session_id)
    store.check()
    # Respreads move few sessions: far from one per insert per session.
    assert store.updates <= 40 * len(ids)
    labels = [label for _, label in store.labels()]
    assert max(abs(label) for label in labels) < 2**40


def test_forgotten_labels_free_their_place(store: Store) -> None:
    for session_id in ("a", "b", "c"):
        store.add(session_id)
    forget_label(store.c, "b")
    assert [sid for sid, _ in store.labels()] == [b"a", b"c"]
    store.add("b")
    store.check()


@settings(max_examples=100, deadline=None)
@given(
    stored=st.lists(IDS, unique=True, max_size=12),
    cursor=IDS,
    neg_seq=st.integers(-5, 5),
    other_seq=st.integers(-5, 5),
)
def test_label_bound_compares_as_the_session_id(
    stored: list[str], cursor: str, neg_seq: int, other_seq: int
) -> None:
    store = Store()
    with closing(store.db):
        for session_id in stored:
            store.add(session_id)
        bound = label_bound(store.c, cursor, neg_seq)
        for session_id, label in store.labels():
            by_id = (session_id, other_seq) > (encode_text(cursor), neg_seq)
            assert ((label, other_seq) > bound) == by_id
