"""The cost of the hashed search index (encryption on) against the plaintext one.

One corpus (the Zipf corpus of ``bench.search_figures``: ``--sessions`` sessions of
``--events`` events, 40 words each, one word in 50 documents) is stored twice, in
a plain store and in an encrypted one (rows sealed as the store seals them).
Then, in one run:

- catch-up: the search index built from the log (``SearchIndex.catch_up``);
- first search: the first ``search_sessions`` of a new ``Sessions`` (its search
  keys not yet in memory: one read of the key store; the other views are caught
  up before);
- first pages: ``search_sessions`` of each query, ``--rounds`` rounds, the two
  stores alternating first; and ``search_events`` of one session.

The ratios (on / off) are what to read on a shared machine.

    python -m bench.sealed_search [--sessions 3000] [--events 20] [--rounds 7] [--postgres]

docs/encryption.md quotes a run.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from eventsourcing.persistence import StoredEvent

from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import search_index_of
from agentlog.domain.json import dumps

from .encryption_cost import store
from .search_figures import PHRASE, RARE, corpus

QUERIES = (
    ("rare word", RARE),
    ("common word", "w0"),
    ("mid-frequency word", "w500"),
    ("3-word phrase", PHRASE),
    ("absent word", "zzzabsent"),
)
MASTER_KEY = base64.b64encode(os.urandom(32)).decode()


def fill(app: Sessions, sessions: int, events: int) -> None:
    """Store the corpus as the application stores rows (sealed when on)."""
    mapper: Any = app.mapper
    rows: list[StoredEvent] = []

    def row(session_id: str, version: int, topic: str, value: Any) -> StoredEvent:
        state = mapper.encode_state(dumps(value))
        return StoredEvent(
            session_id, version, topic, mapper.seal(session_id, version, topic, state)
        )

    for head, log in corpus(sessions, events):
        session_id = str(head["id"])
        rows.append(row(session_id, 1, "session", {"type": "session", **head}))
        rows += [row(session_id, i + 2, str(e["type"]), e) for i, e in enumerate(log)]
        if len(rows) >= 5_000:
            app.recorder.insert_events(rows)
            rows = []
    if rows:
        app.recorder.insert_events(rows)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3_000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    backend = "PostgreSQL" if args.postgres else f"SQLite {sqlite3.sqlite_version}"
    print(
        f"# {backend}, Python {platform.python_version()}, {args.sessions:,} sessions "
        f"x {args.events} events, load {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    catch_up: dict[bool, float] = {}
    first: dict[bool, float] = {}
    pages: dict[tuple[bool, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        envs = {
            sealed: stack.enter_context(store(args.postgres, Path(tmp), sealed))
            for sealed in (False, True)
        }
        for sealed, env in envs.items():
            app = Sessions(env=env)
            try:
                fill(app, args.sessions, args.events)
                index = search_index_of(app)
                assert index is not None
                catch_up[sealed] = timed(index.catch_up)
                assert (index.search.view.hashing is not None) == sealed
                views_of(app).catch_up()  # the listing and titles a page reads
            finally:
                app.close()
        apps = {
            sealed: stack.enter_context(opened(env)) for sealed, env in envs.items()
        }
        for sealed, app in apps.items():
            first[sealed] = timed(partial(SessionQuery(app).search_sessions, RARE))
        for number in range(args.rounds):
            order = (False, True) if number % 2 == 0 else (True, False)
            for sealed in order:
                query = SessionQuery(apps[sealed])
                for name, text in QUERIES:
                    took = timed(partial(query.search_sessions, text))
                    pages.setdefault((sealed, name), []).append(took)
                took = timed(partial(query.search_events, "s000007", "w500"))
                pages.setdefault((sealed, "one session"), []).append(took)
        same = all(
            SessionQuery(apps[True]).search_sessions(text).to_json()
            == SessionQuery(apps[False]).search_sessions(text).to_json()
            for _, text in QUERIES
        )
    print("| case | plaintext | hashed | hashed/plaintext |")
    print("|---|---|---|---|")
    print(
        f"| index catch-up | {catch_up[False]:.2f} s | {catch_up[True]:.2f} s | "
        f"{catch_up[True] / catch_up[False]:.2f}x |"
    )
    print(
        f"| first search of a new `Sessions` | {first[False] * 1e3:.1f} ms | "
        f"{first[True] * 1e3:.1f} ms | {first[True] / first[False]:.1f}x |"
    )
    for name, _ in (*QUERIES, ("one session", "")):
        off = statistics.median(pages[(False, name)])
        on = statistics.median(pages[(True, name)])
        label = "`search_events`, `w500`" if name == "one session" else name
        print(
            f"| first page: {label} | {off * 1e3:.1f} ms | {on * 1e3:.1f} ms | "
            f"{on / off:.1f}x |"
        )
    print(f"\nsame pages on both stores: {same}")


@contextmanager
def opened(env: dict[str, str]) -> Iterator[Sessions]:
    app = Sessions(env=env)
    try:
        yield app
    finally:
        app.close()


if __name__ == "__main__":
    main()
