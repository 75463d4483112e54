"""Reads and a fork as the number of sessions grows (10,000 to 1,000,000).

``python -m bench.many_sessions --backend postgres --sessions 10000,1000000``

For each size, a fresh store gets ``--sessions`` sessions straight through the
recorder (``tests.builders.store_directly``): most are a header alone,
``IN_SCOPE`` spread among them are in the scope's workspace and owner, one in every
``FORK_EVERY`` is a fork of the session before it, and one chain of
``CHAIN`` forks, each of one finished turn, ends in the session the lineage
trace and the fork start from. The views are caught up once, then the medians
of ``--repeat`` runs of: the listing's first page, a scoped listing's first
page and its records, the lineage trace of the chain's last session, and a
fork of it (a new child each time). The ratio column divides each figure by
the first size's; the sizes take turns in each round
(docs/scale.md#many-sessions).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from typing import TYPE_CHECKING, Any

from psycopg.sql import SQL, Identifier

from agentlog import Scope, SessionQuery
from agentlog.application.catch_up import views_of
from agentlog.domain.session import make_header
from bench.base import bench_store, versions
from tests.builders import TE, TS, U, store_directly

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agentlog.application import Sessions
    from agentlog.domain.json import Envelope

SCOPE = Scope(cwd="/ws/in", owner="o1")
IN_SCOPE = 50
FORK_EVERY = 100
CHAIN = 10


def sessions(count: int) -> Iterator[tuple[str, dict[str, Any], list[Envelope]]]:
    """The store's sessions, oldest first; the chain's forks come last."""
    every = (count - CHAIN) // IN_SCOPE
    for number in range(count - CHAIN):
        fields: dict[str, Any] = (
            {"cwd": "/ws/in", "owner": "o1"}
            if number % every == 0 and number // every < IN_SCOPE
            else {"cwd": "/ws/other", "owner": f"o{number % 7 + 2}"}
        )
        if number % FORK_EVERY == 1:
            fields["parent_session"] = f"s{number - 1:07d}"
        session_id = f"s{number:07d}"
        yield session_id, make_header(session_id, created_at=number, **fields), []
    parent: str | None = None
    for link in range(CHAIN):
        session_id = f"chain{link:02d}"
        items = [TS(1), U(f"chain prompt {link}"), TE(1)]
        created = count + link
        seed = [item.envelope(seq, created) for seq, item in enumerate(items)]
        header = make_header(
            session_id, created_at=created, cwd="/ws/in", parent_session=parent
        )
        yield session_id, header, seed
        parent = session_id


def build(app: Sessions, count: int, schema: str | None) -> None:
    """Store ``count`` sessions, catch the views up and, on PostgreSQL, analyze
    the tables: a server with autovacuum on (the default) keeps statistics as
    tables grow, but the test server runs with it off, and a recursive lineage
    query planned without statistics scans the whole view."""
    started = time.perf_counter()
    store_directly(app, sessions(count))
    stored = time.perf_counter() - started
    started = time.perf_counter()
    views_of(app).catch_up()
    caught_up = time.perf_counter() - started
    if schema is not None:
        analyze(schema)
    print(
        f"# {count:,} sessions: stored in {stored:.0f} s, views caught up in "
        f"{caught_up:.0f} s",
        flush=True,
    )


def analyze(schema: str) -> None:
    """What autovacuum would have done by now: statistics for every table."""
    import psycopg

    from tests.conftest import pg_params

    with psycopg.connect(**pg_params()) as connection:
        tables = connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
        for (table,) in tables:
            connection.execute(
                SQL("ANALYZE {0}.{1}").format(Identifier(schema), Identifier(table))
            )


def operations(app: Sessions) -> dict[str, Callable[[], object]]:
    """The timed operations on a built store (each checked once)."""
    plain = SessionQuery(app)
    scoped = plain.scoped(SCOPE)
    last = f"chain{CHAIN - 1:02d}"
    trace = plain.trace_session(last)
    assert len(trace.ancestors) == CHAIN - 1, trace
    assert len(scoped.list_sessions()) == IN_SCOPE

    def fork() -> None:
        app.close(app.fork(last))

    return {
        "listing, first page of 50": lambda: plain.list_summaries(50),
        "scoped listing, first page of 50": lambda: scoped.list_summaries(50),
        "scoped listing, every record": scoped.list_sessions,
        "lineage trace of a fork 9 deep": lambda: plain.trace_session(last),
        "fork of a stored session (+ close)": fork,
    }


def measure(stores: dict[int, Sessions], repeat: int) -> dict[int, dict[str, float]]:
    """Medians per size; the sizes take turns, so the machine's load falls on
    each alike."""
    calls = {count: operations(app) for count, app in stores.items()}
    samples: dict[int, dict[str, list[float]]] = {count: {} for count in stores}
    # The fork goes last, in rounds of its own: a read after it would time
    # the views catching up the child.
    names = list(next(iter(calls.values())))
    for phase in (names[:-1], names[-1:]):
        for round_ in range(repeat + 1):
            for count, named in calls.items():
                for name in phase:
                    started = time.perf_counter()
                    named[name]()
                    if round_:  # the first round warms
                        samples[count].setdefault(name, []).append(
                            time.perf_counter() - started
                        )
    return {
        count: {name: statistics.median(v) * 1000 for name, v in named.items()}
        for count, named in samples.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--sessions", default="10000,1000000")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    print(versions())
    with contextlib.ExitStack() as stack:
        stores: dict[int, Sessions] = {}
        for count in [int(n) for n in args.sessions.split(",")]:
            app, where = stack.enter_context(bench_store(args.backend))
            build(app, count, where if isinstance(where, str) else None)
            stores[count] = app
        results = measure(stores, args.repeat)
    sizes = list(results)
    first = results[sizes[0]]
    print(
        "| operation | "
        + " | ".join(f"{size:,} sessions" for size in sizes)
        + " | ratio |\n|---|"
        + "---|" * (len(sizes) + 1)
    )
    for name in first:
        cells = " | ".join(f"{results[size][name]:.2f} ms" for size in sizes)
        ratio = results[sizes[-1]][name] / first[name]
        print(f"| {name} | {cells} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
