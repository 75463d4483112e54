"""Erase time, retention (gc) throughput and the FTS5 ``optimize`` cost.

A store of ``--sessions`` sessions (half last written 40 days ago), each one turn
of ``--prompts`` user prompts of about 40 words from a 5,000-word vocabulary, all
indexed by the views and the search index. Then: single erases (each with its
scrub: FTS5 ``optimize`` and a WAL checkpoint on SQLite), the scrub alone, and
``erase_older_than`` of the old half (sessions/s).

    python -m bench.erasure_figures --backend sqlite --sessions 10000
    python -m bench.erasure_figures --backend postgres --sessions 10000
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventsourcing.sqlite import SQLiteFactory

from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.erasure import cutoff_before
from agentlog.application.search_index import search_index_of
from agentlog.domain.session import make_header, now_ms
from agentlog.infrastructure.backends.sqlite.factory import AgentlogSQLiteFactory
from bench.base import bench_store, versions
from tests.builders import TE, TS, U, store_directly

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentlog.domain.json import Envelope

DAY = 86_400_000


def vocabulary(size: int = 5000) -> list[str]:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(size)]


def generate(app: Sessions, count: int, prompts: int, now: int) -> list[str]:
    """Store ``count`` sessions through the recorder; returns the new half's ids."""
    rng = random.Random(11)
    words = vocabulary()
    new: list[str] = []

    def sessions() -> Iterator[tuple[str, dict[str, Any], list[Envelope]]]:
        for number in range(count):
            session_id = f"s{number:06d}"
            time_ms = now - (40 if number % 2 == 0 else 1) * DAY
            if number % 2:
                new.append(session_id)
            items = [TS(1)]
            items += [U(" ".join(rng.choices(words, k=40))) for _ in range(prompts)]
            items.append(TE(1))
            seed = [item.envelope(seq, time_ms + seq) for seq, item in enumerate(items)]
            header = make_header(session_id, created_at=time_ms, cwd="/bench")
            yield session_id, header, seed

    store_directly(app, sessions())
    return new


def timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


class PlainSQLiteFactory(AgentlogSQLiteFactory):
    """Our SQLite factory with the library's own datastore: connections without
    ``secure_delete`` (``--no-secure-delete``, to measure its cost)."""

    def __init__(self, env: Any) -> None:
        SQLiteFactory.__init__(self, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=5)
    parser.add_argument("--erases", type=int, default=10)
    parser.add_argument(
        "--no-secure-delete",
        action="store_true",
        help="SQLite connections without secure_delete (to measure its cost)",
    )
    args = parser.parse_args()
    settings = {"PERSISTENCE_MODULE": f"{__name__}:PlainSQLiteFactory"}
    print(
        f"# erasure figures: {args.backend}, {args.sessions:,} sessions x "
        f"{args.prompts} prompts of 40 words"
        + (", secure_delete off" if args.no_secure_delete else "")
    )
    print(versions())
    extra = settings if args.no_secure_delete and args.backend == "sqlite" else {}
    with bench_store(args.backend, extra) as (app, where):
        now = now_ms()
        new: list[str] = []
        seconds = timed(
            lambda: new.extend(generate(app, args.sessions, args.prompts, now))
        )
        print(f"generate (recorder inserts): {seconds:.1f} s")
        index = search_index_of(app)
        views = views_of(app)
        seconds = timed(views.catch_up)
        print(f"views catch-up: {seconds:.1f} s")
        if index is not None:
            seconds = timed(index.catch_up)
            print(f"search index catch-up: {seconds:.1f} s")
        if isinstance(where, Path):
            size = where.stat().st_size / 2**20
            print(f"database file: {size:.0f} MiB")
        first = timed(app.eraser.scrub)
        print(
            "first scrub after the catch-up (FTS5 optimize of every segment "
            f"+ WAL checkpoint): {first * 1000:.0f} ms"
        )
        erases = [
            timed(lambda key=key: app.erase(key, reason="bench"))
            for key in new[: args.erases]
        ]
        print(
            f"erase of one session (with its scrub), median of {len(erases)}: "
            f"{statistics.median(erases) * 1000:.0f} ms"
        )
        scrub = app.eraser.scrub
        app.eraser.scrub = lambda: True  # type: ignore[method-assign]
        bare = [
            timed(lambda key=key: app.erase(key, reason="bench"))
            for key in new[args.erases : 2 * args.erases]
        ]
        app.eraser.scrub = scrub  # type: ignore[method-assign]
        print(
            f"erase of one session without the scrub, median of {len(bare)}: "
            f"{statistics.median(bare) * 1000:.0f} ms"
        )
        once = timed(app.eraser.scrub)
        print(
            f"one scrub after those {len(bare)} erases (optimize merges their "
            f"delete markers into the index): {once * 1000:.0f} ms"
        )
        cutoff = cutoff_before(30 * DAY, now)
        report: list[Any] = []
        seconds = timed(
            lambda: report.append(
                app.erase_older_than(cutoff, reason="retention bench")
            )
        )
        erased = len(report[0].erased)
        print(
            f"gc of {erased:,} old sessions: {seconds:.1f} s, "
            f"{erased / seconds:,.0f} sessions/s (one scrub at the end)"
        )


if __name__ == "__main__":
    main()
