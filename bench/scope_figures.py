"""What a scope costs: a scoped listing against the unscoped one and against
filtering every session in Python (docs/scope.md#enforced-in-the-query).

A store of ``--sessions`` sessions (one short turn each), ``--in-scope`` of them
with the scope's ``cwd`` and ``owner``, the rest in the same workspace under
another owner, under the same owner in another workspace, or without an owner.
Medians of ``--repeat`` runs of: the first listing page (50), all sessions as
records, the scoped page and records, the same records by an unscoped
``filter_sessions`` on cwd and owner (reading every header), a scoped search,
and a scoped read of an in-scope and of an out-of-scope session. No assertion
on time.

    python -m bench.scope_figures --backend sqlite --sessions 10000
    python -m bench.scope_figures --backend postgres --sessions 10000
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import TYPE_CHECKING, Any

from agentlog import Scope, SessionFilter, SessionQuery, SessionQueryError
from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.domain.session import make_header
from bench.base import bench_store, versions
from tests.builders import TE, TS, U, store_directly

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentlog.domain.json import Envelope

SCOPE = Scope(cwd="/ws/in", owner="o1")


def place(number: int, count: int, in_scope: int) -> dict[str, Any]:
    """Every ``count // in_scope``-th session is in scope (``in_scope`` of them)."""
    step = max(1, count // in_scope)
    if number % step == 0 and number // step < in_scope:
        return {"cwd": "/ws/in", "owner": "o1"}
    return [
        {"cwd": "/ws/in", "owner": "o2"},
        {"cwd": "/ws/other", "owner": "o1"},
        {"cwd": "/ws/in"},
    ][number % 3]


def generate(app: Sessions, count: int, in_scope: int) -> tuple[str, str]:
    """Store the sessions through the recorder; an in-scope and an outside id."""
    inside = outside = ""

    def sessions() -> Iterator[tuple[str, dict[str, Any], list[Envelope]]]:
        nonlocal inside, outside
        for number in range(count):
            session_id = f"s{number:06d}"
            fields = place(number, count, in_scope)
            if fields == {"cwd": "/ws/in", "owner": "o1"}:
                inside = session_id
            else:
                outside = session_id
            items = [TS(1), U(f"needle prompt {number}"), TE(1)]
            seed = [item.envelope(seq, 1000 + number) for seq, item in enumerate(items)]
            header = make_header(session_id, created_at=1000 + number, **fields)
            yield session_id, header, seed

    store_directly(app, sessions())
    return inside, outside


def median_ms(call: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def missing(call: Any) -> None:
    try:
        call()
    except SessionQueryError:
        return
    raise AssertionError("an out-of-scope read returned data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--in-scope", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"# scope figures: {args.backend}, {args.sessions:,} sessions, "
        f"{args.in_scope} in scope, median of {args.repeat}"
    )
    print(versions())
    with bench_store(args.backend) as (app, _):
        inside, outside = generate(app, args.sessions, args.in_scope)
        views_of(app).catch_up()
        index = search_index_of(app)
        if index is not None:
            index.catch_up()
        plain = SessionQuery(app)
        scoped = plain.scoped(SCOPE)
        wanted = SessionFilter(cwd=("/ws/in",), owner=("o1",))
        assert len(scoped.list_sessions()) == args.in_scope
        assert len(plain.filter_sessions(wanted)) == args.in_scope
        figures = [
            ("unscoped first page (50)", lambda: plain.list_summaries(50)),
            ("scoped first page (50)", lambda: scoped.list_summaries(50)),
            ("unscoped list_sessions (all)", plain.list_sessions),
            ("scoped list_sessions", scoped.list_sessions),
            (
                "unscoped filter_sessions(cwd, owner)",
                lambda: plain.filter_sessions(wanted),
            ),
            (
                "scoped search_sessions('needle')",
                lambda: scoped.search_sessions("needle", limit=20),
            ),
            ("scoped read_surface, in scope", lambda: scoped.read_surface(inside)),
            (
                "scoped read_surface, out of scope",
                lambda: missing(lambda: scoped.read_surface(outside)),
            ),
            (
                "scoped read_surface, never stored",
                lambda: missing(lambda: scoped.read_surface("never")),
            ),
        ]
        results = {name: median_ms(call, args.repeat) for name, call in figures}
        for name, value in results.items():
            print(f"{name}: {value:.2f} ms")
        ratio = (
            results["unscoped filter_sessions(cwd, owner)"]
            / results["scoped list_sessions"]
        )
        print(f"filtering in Python / scoped in the query: {ratio:.0f}x")


if __name__ == "__main__":
    main()
