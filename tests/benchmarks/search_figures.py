"""Content-search figures: catch-up throughput, index size, first-page latency.

``python -m tests.benchmarks.search_figures --sessions 10000 --events 100
[--postgres] [--db PATH]`` builds a corpus of Zipf-distributed words (a rare
word in about fifty events, a common word in nearly every one) straight into
the recorder, indexes it from position 0 (``rebuild``), and times the first
page of ``search_sessions`` for a rare word, a common word and a 3-word phrase,
beside a naive scan (``LIKE`` over the stored rows, or ``ILIKE`` on
PostgreSQL). ``--db`` keeps the SQLite corpus in a file and reuses it on the
next run (its byte counts in a ``.json`` beside it). Prints Markdown;
docs/search.md quotes a run. Run it under ``/usr/bin/time -v`` for peak RSS.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agentlog.application import Sessions, search_plan
from agentlog.application.catch_up import views_of
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import search_index_of
from agentlog.domain.json import dumps
from tests.query.support import header, raw_write_many

VOCABULARY = [f"w{n}" for n in range(20_000)]
RARE = "zyzzogeton"
PHRASE = "w1 w2 w3"
REPEAT = 20


def corpus(
    sessions: int, events: int, seed: int = 1
) -> Iterator[tuple[Any, list[Any]]]:
    rng = random.Random(seed)
    weights = list(
        itertools.accumulate(1 / (rank + 1) for rank in range(len(VOCABULARY)))
    )
    rare_left = 50
    for number in range(sessions):
        log: list[dict[str, Any]] = []
        for seq in range(events):
            words = rng.choices(VOCABULARY, cum_weights=weights, k=40)
            if rare_left and rng.random() < 50 / (sessions * events):
                words[5] = RARE
                rare_left -= 1
            if seq % 3 == 2:
                data = {
                    "callId": f"c{seq}",
                    "name": "bash",
                    "arguments": " ".join(words),
                }
                log.append({"type": "tool/call", "seq": seq, "time": seq, "data": data})
            else:
                block = {"type": "text", "text": " ".join(words)}
                data = {"content": [block], "source": {"kind": "user"}}
                log.append(
                    {
                        "type": "user/message",
                        "seq": seq,
                        "time": seq,
                        "data": data,
                        "surfaceOp": "append",
                    }
                )
        yield header(f"s{number:06}", created_at=number), log


def quantiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


def timed(
    call: Callable[[], object], repeat: int = REPEAT
) -> tuple[float, float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return quantiles(samples)


@contextmanager
def store(
    postgres: bool, path: str | None = None
) -> Iterator[tuple[Sessions, Callable[[], int], Callable[[str], object]]]:
    if postgres:
        from tests.conftest import postgres_schema_env

        schemas = postgres_schema_env()
        env = next(schemas)
        app = Sessions(env=env)
        schema = env["POSTGRES_SCHEMA"]

        def size() -> int:
            with app.factory.datastore.transaction(commit=False) as curs:  # type: ignore[attr-defined]
                curs.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) AS n FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relname LIKE 'agentlog_search_v2%%' "
                    "AND c.relkind = 'r'",
                    (schema,),
                )
                return int(curs.fetchone()["n"] or 0)

        def naive(word: str) -> object:
            with app.factory.datastore.transaction(commit=False) as curs:  # type: ignore[attr-defined]
                curs.execute(
                    f'SELECT DISTINCT originator_id FROM "{schema}".'
                    f"{app.recorder.events_table_name} "
                    "WHERE convert_from(state, 'UTF8') ILIKE %s LIMIT 20",
                    (f"%{word}%",),
                )
                return curs.fetchall()

        try:
            yield app, size, naive
        finally:
            app.close()
            schemas.close()
        return
    with tempfile.TemporaryDirectory() as directory:
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": path or f"{directory}/agentlog.db",
        }
        app = Sessions(env=env)

        def size() -> int:
            # Every page of the search tables and their indexes (FTS5 shadow
            # tables included), as SQLite's dbstat counts them.
            with app.factory.datastore.transaction(commit=False) as c:  # type: ignore[attr-defined]
                c.execute(
                    "SELECT sum(pgsize) FROM dbstat "
                    "WHERE name LIKE 'agentlog_search_v2%'"
                )
                return int(c.fetchone()[0] or 0)

        def naive(word: str) -> object:
            with app.factory.datastore.transaction(commit=False) as c:  # type: ignore[attr-defined]
                c.execute(
                    "SELECT DISTINCT originator_id FROM stored_events "
                    "WHERE CAST(state AS TEXT) LIKE ? LIMIT 20",
                    (f"%{word}%",),
                )
                return c.fetchall()

        try:
            yield app, size, naive
        finally:
            app.close()


def build(app: Sessions, sessions: int, events: int) -> tuple[int, int]:
    """Store the corpus; the log's JSON bytes and its indexed text bytes."""
    log_bytes = text_bytes = 0
    batch: list[Any] = []
    for head, log in corpus(sessions, events):
        log_bytes += sum(len(dumps(event)) for event in log)
        text_bytes += sum(
            len(
                str(
                    e["data"].get("arguments") or e["data"]["content"][0]["text"]
                ).encode()
            )
            for e in log
        )
        batch.append((head, log))
        if len(batch) == 100:
            raw_write_many(app, batch)
            batch = []
    if batch:
        raw_write_many(app, batch)
    return log_bytes, text_bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--db", help="SQLite corpus file to keep and reuse")
    args = parser.parse_args()
    sidecar = None if args.db is None else f"{args.db}.json"
    with store(args.postgres, args.db) as (app, size, naive):
        start = time.perf_counter()
        if sidecar is not None and os.path.exists(sidecar):
            with open(sidecar) as file:
                log_bytes, text_bytes = json.load(file)
            print(f"- corpus reused from {args.db}")
        else:
            log_bytes, text_bytes = build(app, args.sessions, args.events)
            print(f"- corpus stored in {time.perf_counter() - start:.1f} s")
            if sidecar is not None:
                with open(sidecar, "w") as file:
                    json.dump([log_bytes, text_bytes], file)
        sys.stdout.flush()
        index = search_index_of(app)
        assert index is not None
        start = time.perf_counter()
        read = index.rebuild()
        elapsed = time.perf_counter() - start
        index_bytes = size()
        events = args.sessions * args.events
        query = SessionQuery(app)
        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(f"## {backend}: {args.sessions:,} sessions, {events:,} events")
        print(
            f"- catch-up from 0: {read:,} notifications in {elapsed:.1f} s = "
            f"{events / elapsed:,.0f} events/s"
        )
        print(
            f"- index: {index_bytes / 1e6:.1f} MB = {index_bytes / events:.0f} B/event = "
            f"{index_bytes / log_bytes:.2f}x the log's JSON bytes "
            f"({log_bytes / events:.0f} B/event), "
            f"{index_bytes / text_bytes:.2f}x its text bytes "
            f"({text_bytes / events:.0f} B/event)"
        )
        start = time.perf_counter()
        views_of(app).catch_up()
        print(
            "- the other views (listing, titles, lineage) caught up in "
            f"{time.perf_counter() - start:.1f} s before the timings (a page reads "
            "its titles there)"
        )
        print(f"- load average before the queries: {os.getloadavg()}")
        view = index.search.view
        print(
            "| query | matching events | path | search_sessions p50 / p95 / max "
            "| naive scan p50 / p95 / max |"
        )
        print("|---|---|---|---|---|")
        for label, text in (
            ("rare word", RARE),
            ("common word", "w0"),
            ("mid-frequency word", "w500"),
            ("3-word phrase", PHRASE),
        ):
            phrase = tuple(text.split())
            ids = view.matching_ids(phrase, search_plan.RARE_CAP)
            matches = len(view.select_ids(phrase, None))
            path = "walk" if ids is None else "sorted ids"
            ours = timed(lambda text=text: query.search_sessions(text), args.repeat)
            floor = timed(lambda text=text: naive(text), args.repeat)
            print(
                f"| {label} `{text}` | {matches:,} | {path} | "
                f"{ours[0]:.1f} / {ours[1]:.1f} / {ours[2]:.1f} ms | "
                f"{floor[0]:.1f} / {floor[1]:.1f} / {floor[2]:.1f} ms |"
            )
            sys.stdout.flush()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
