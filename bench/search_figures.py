"""Content-search figures: catch-up throughput, index size, first-page latency.

``python -m bench.search_figures --sessions 10000 --events 100
[--corpus zipf|realistic] [--seed N] [--postgres] [--db PATH] [--schema NAME]
[--keep-index]`` builds a corpus
straight into the recorder, indexes it from position 0 (``rebuild``), and times
the first page of ``search_sessions`` for a rare word, a common word, a
mid-frequency word and 3-word phrases, beside a naive scan (``LIKE`` over the
stored rows, or ``ILIKE`` on PostgreSQL). ``--corpus zipf`` (the default) draws
40 words per event from a Zipf distribution over ``w0..w19999``;
``--corpus realistic`` is agent sessions written from the Python standard
library's sources (:mod:`bench.stdlib_corpus`), its queries chosen by
counting a pilot prefix. ``--db`` keeps the SQLite corpus in a file and reuses
it on the next run (its byte counts and queries in a ``.json`` beside it);
``--schema`` does the same with a PostgreSQL schema (its ``.json`` in ``/tmp``),
and ``--keep-index`` times a reused corpus's index as it is, caught up, not
rebuilt. Beside each first page's wall-clock time, its CPU time: this
process's, plus on PostgreSQL the server backends' serving it (read from
``/proc``: the server must run on this machine), which a shared machine's
load does not stretch.
Prints Markdown; docs/search.md quotes a run. Run it under ``/usr/bin/time -v``
for peak RSS.
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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from agentlog.application import Sessions, search_plan
from agentlog.application.catch_up import views_of
from agentlog.application.query import SessionQuery
from agentlog.application.search_index import search_index_of
from agentlog.domain.json import dumps
from agentlog.domain.search_text import document_text, tokens
from bench import stdlib_corpus
from tests.query.support import header, raw_write_many

VOCABULARY = [f"w{n}" for n in range(20_000)]
RARE = stdlib_corpus.RARE
PHRASE = "w1 w2 w3"
ZIPF_QUERIES = (
    ("rare word", RARE),
    ("common word", "w0"),
    ("mid-frequency word", "w500"),
    ("3-word phrase", PHRASE),
)
REPEAT = 20
BATCH_BYTES = 2_000_000
"""At most about this much JSON per insert: the PostgreSQL recorder pipelines a
batch's rows, and psycopg never returned from a pipeline of 75 realistic
sessions (6 MB; 50 sessions, 4 MB, and 100 Zipf sessions, 3 MB, were stored)."""


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
    call: Callable[[], object],
    repeat: int = REPEAT,
    cpu: list[float] | None = None,
    server: Callable[[], float] | None = None,
) -> tuple[float, float, float]:
    """Wall-clock p50, p95 and max in ms; ``cpu`` gets each sample's CPU
    (this process's, plus the server's from ``server`` if given), in ms."""
    samples = []
    for _ in range(repeat):
        used = server() if server is not None else 0.0
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        samples.append((time.perf_counter() - start) * 1000)
        if cpu is not None:
            spent = time.process_time() - start_cpu
            if server is not None:
                spent += server() - used
            cpu.append(spent * 1000)
    return quantiles(samples)


def server_clock(postgres: bool, call: Callable[[], object]) -> Callable[[], float]:
    """The CPU seconds used so far by the PostgreSQL backends serving this
    process (found after one ``call``, so its pool's connections are open);
    a clock that reads 0 on SQLite, which runs in this process."""
    if not postgres:
        return lambda: 0.0
    import psycopg

    from bench import server_cpu
    from tests.conftest import pg_params

    call()
    with psycopg.connect(**pg_params()) as conn:
        pids = server_cpu.backends(conn)
    return lambda: server_cpu.cpu_seconds(pids)


def kept_schema(name: str) -> Iterator[dict[str, str]]:
    """A named schema on the test server, created if missing and kept, so a
    corpus stored once is reused (``--schema``)."""
    import psycopg

    from agentlog.infrastructure.store import parse_store_url
    from tests.conftest import PG_URL, pg_params

    with psycopg.connect(**pg_params()) as connection:
        connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{name}"')
    yield {**parse_store_url(PG_URL).env, "POSTGRES_SCHEMA": name}


@contextmanager
def store(
    postgres: bool, path: str | None = None, schema_name: str | None = None
) -> Iterator[tuple[Sessions, Callable[[], int], Callable[[str], object]]]:
    if postgres:
        from tests.conftest import postgres_schema_env

        schemas = (
            postgres_schema_env() if schema_name is None else kept_schema(schema_name)
        )
        env = next(schemas)
        app = Sessions(env=env)
        schema = env["POSTGRES_SCHEMA"]

        def size() -> int:
            with app.factory.datastore.transaction(commit=False) as curs:  # type: ignore[attr-defined]
                curs.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) AS n FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relname LIKE 'agentlog_search_v%%' "
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
                    "WHERE name LIKE 'agentlog_search_v%'"
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


def logs(
    kind: str, sessions: int, events: int, seed: int
) -> Iterable[tuple[Any, list[Any]]]:
    if kind == "realistic":
        return stdlib_corpus.Corpus(sessions, events, seed)
    return corpus(sessions, events, seed)


def build(
    app: Sessions, kind: str, sessions: int, events: int, seed: int
) -> dict[str, Any]:
    """Store the corpus; what it holds: the log's JSON bytes, the indexed text
    bytes (exactly the documents content search extracts), documents per type,
    their tokens, and (realistic corpus) the queries chosen on a pilot prefix."""
    log_bytes = text_bytes = token_count = 0
    documents: Counter[str] = Counter()
    pilot: list[str] | None = [] if kind == "realistic" else None
    batch: list[Any] = []
    batch_bytes = 0
    for number, (head, log) in enumerate(logs(kind, sessions, events, seed), 1):
        for event in log:
            size = len(dumps(event))
            log_bytes += size
            batch_bytes += size
            text = document_text(event)
            if text is None:
                continue
            documents[event["type"]] += 1
            text_bytes += len(text.encode())
            token_count += len(tokens(text))
            if pilot is not None and number <= stdlib_corpus.PILOT_SESSIONS:
                pilot.append(text)
        batch.append((head, log))
        if len(batch) == 100 or batch_bytes >= BATCH_BYTES:
            raw_write_many(app, batch)
            batch = []
            batch_bytes = 0
    if batch:
        raw_write_many(app, batch)
    figures: dict[str, Any] = {
        "corpus": kind,
        "seed": seed,
        "sessions": sessions,
        "events": events,
        "log_bytes": log_bytes,
        "text_bytes": text_bytes,
        "tokens": token_count,
        "documents": dict(sorted(documents.items())),
    }
    if pilot is not None:
        figures["queries"] = queries_of(stdlib_corpus.choose_queries(pilot))
    return figures


def queries_of(chosen: stdlib_corpus.Queries) -> dict[str, Any]:
    """The realistic corpus's timed queries, with the pilot's counts."""
    pilot = f"of the pilot's {chosen.pilot_documents:,} documents"
    return {
        "rows": [
            ["rare word", RARE],
            ["most common token", chosen.common],
            ["mid-frequency word", chosen.middle],
            ["natural phrase", chosen.natural],
            ["top-3 tokens as a phrase", chosen.worst],
        ],
        "notes": [
            f"most common token `{chosen.common}`: in {chosen.counts[chosen.common]:,} "
            + pilot,
            f"mid-frequency word `{chosen.middle}` (nearest 0.75%): in "
            f"{chosen.counts[chosen.middle]:,} " + pilot,
            f"natural phrase `{chosen.natural}` (the most frequent of "
            f"{len(stdlib_corpus.NATURAL_PHRASES)} candidates): in "
            f"{chosen.counts[chosen.natural]:,} " + pilot,
            f"top-3 tokens as a phrase `{chosen.worst}`: in "
            f"{chosen.counts[chosen.worst]:,} " + pilot + " as a phrase, "
            f"all three words in {chosen.together:,}",
        ],
    }


def load_figures(sidecar: str) -> dict[str, Any]:
    """A stored corpus's figures; an older sidecar is ``[log_bytes, text_bytes]``
    of a Zipf corpus (text bytes then an estimate, no document counts)."""
    with open(sidecar) as file:
        stored = json.load(file)
    if isinstance(stored, list):
        return {"corpus": "zipf", "log_bytes": stored[0], "text_bytes": stored[1]}
    return dict(stored)


def describe(figures: dict[str, Any], events: int) -> None:
    """Print what the corpus holds: bytes per event, documents, tokens."""
    print(
        f"- corpus `{figures['corpus']}`: {figures['log_bytes'] / events:,.0f} JSON "
        f"bytes/event, {figures['text_bytes'] / events:,.0f} indexed text "
        "bytes/event (UTF-8 of the extracted documents)"
    )
    documents = figures.get("documents")
    if documents:
        count = sum(documents.values())
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in documents.items())
        print(
            f"- documents: {count:,} ({kinds}); "
            f"{figures['tokens'] / count:.1f} tokens/document, "
            f"{figures['text_bytes'] / figures['tokens']:.2f} bytes/token"
        )
    for note in figures.get("queries", {}).get("notes", ()):
        print(f"- query choice: {note}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--corpus", choices=("zipf", "realistic"), default="zipf")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--db", help="SQLite corpus file to keep and reuse")
    parser.add_argument(
        "--schema", help="PostgreSQL schema to keep the corpus in and reuse"
    )
    parser.add_argument(
        "--keep-index",
        action="store_true",
        help="a reused corpus's index as it is (caught up, not rebuilt): "
        "no catch-up figure",
    )
    args = parser.parse_args()
    if args.schema is not None and not args.postgres:
        parser.error("--schema needs --postgres")
    kept = args.db if args.schema is None else f"/tmp/agentlog-bench-{args.schema}"
    sidecar = None if kept is None else f"{kept}.json"
    if sidecar is not None and os.path.exists(sidecar):
        stored = load_figures(sidecar)
        asked = {
            "corpus": args.corpus,
            "sessions": args.sessions,
            "events": args.events,
        }
        for key, value in asked.items():
            if stored.get(key, value) != value:
                parser.error(f"{kept} holds {key} {stored[key]}, not {value}")
    with store(args.postgres, args.db, args.schema) as (app, size, naive):
        start = time.perf_counter()
        if sidecar is not None and os.path.exists(sidecar):
            figures = load_figures(sidecar)
            print(f"- corpus reused from {kept}")
        else:
            figures = build(app, args.corpus, args.sessions, args.events, args.seed)
            print(f"- corpus stored in {time.perf_counter() - start:.1f} s")
            if sidecar is not None:
                with open(sidecar, "w") as file:
                    json.dump(figures, file)
        log_bytes, text_bytes = figures["log_bytes"], figures["text_bytes"]
        events = args.sessions * args.events
        describe(figures, events)
        sys.stdout.flush()
        index = search_index_of(app)
        assert index is not None
        start = time.perf_counter()
        keep = args.keep_index and kept is not None
        read = index.catch_up() if keep else index.rebuild()
        elapsed = time.perf_counter() - start
        index_bytes = size()
        query = SessionQuery(app)
        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(f"## {backend}: {args.sessions:,} sessions, {events:,} events")
        if keep:
            print(f"- index kept: {read:,} notifications caught up in {elapsed:.1f} s")
        else:
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
            "| its CPU p50 / p95 | its second page p50 / p95 "
            "| naive scan p50 / p95 / max |"
        )
        print("|---|---|---|---|---|---|---|")
        rows = figures.get("queries", {}).get("rows", ZIPF_QUERIES)
        for label, text in rows:
            phrase = tuple(text.split())
            own = view.rare_cap()
            cap = (
                search_plan.RARE_CAP if own is None else min(own, search_plan.RARE_CAP)
            )
            ids = view.matching_ids(phrase, cap)
            matches = len(view.select_ids(phrase, None))
            path = "walk" if ids is None else "sorted ids"
            if view.lists_in_order:
                path = "bands"
            first = lambda text=text: query.search_sessions(text)  # noqa: E731
            clock = server_clock(args.postgres, first)
            cpu: list[float] = []
            ours = timed(first, args.repeat, cpu, clock)
            cursor = query.search_sessions(text).next_cursor
            second = (
                timed(
                    lambda text=text, c=cursor: query.search_sessions(text, cursor=c),
                    args.repeat,
                )
                if cursor is not None
                else None
            )
            spent = quantiles(cpu)
            shown = "-" if second is None else f"{second[0]:.1f} / {second[1]:.1f} ms"
            floor = timed(lambda text=text: naive(text), args.repeat)
            print(
                f"| {label} `{text}` | {matches:,} | {path} | "
                f"{ours[0]:.1f} / {ours[1]:.1f} / {ours[2]:.1f} ms | "
                f"{spent[0]:.1f} / {spent[1]:.1f} ms | {shown} | "
                f"{floor[0]:.1f} / {floor[1]:.1f} / {floor[2]:.1f} ms |"
            )
            sys.stdout.flush()
        print(f"- load average after the queries: {os.getloadavg()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
