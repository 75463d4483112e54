"""Listing's first page with many live handles vs none (issue "service", W3 live).

``python -m bench.live_listing [--sessions 10000] [--store URL]``
creates and flushes N sessions through one ``Sessions`` without closing them
(``max_live`` raised so every handle stays live), times the first listing page,
closes every handle and times it again. The figure is the ratio of the two
medians (target: within 2×); no assertion on time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass

from agentlog.application import SessionQuery, Sessions

TURN = [
    (
        "turn/start",
        {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}},
        None,
    ),
    (
        "user/message",
        {"content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}},
        "append",
    ),
    ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None),
]


@dataclass
class LiveListing:
    sessions: int
    live_handles: int
    with_live_ms: float
    without_live_ms: float

    @property
    def ratio(self) -> float:
        return self.with_live_ms / self.without_live_ms

    def line(self) -> str:
        return (
            f"first page, {self.sessions} sessions: {self.with_live_ms:.2f} ms with "
            f"{self.live_handles} live handles, {self.without_live_ms:.2f} ms with 0 "
            f"-> {self.ratio:.2f}x (target <= 2x)"
        )


def first_page_ms(app: Sessions, repeats: int = 7) -> float:
    query = SessionQuery(app)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        page = query.list_summaries(limit=50)
        samples.append((time.perf_counter() - started) * 1000)
        assert len(page.items) == 50 or not page.next_cursor
    return statistics.median(samples)


def measure(store: str, sessions: int) -> LiveListing:
    app = Sessions(store=store, max_live=sessions + 1)
    try:
        for index in range(sessions):
            handle = app.create_session(session_id=f"live-{index:06d}")
            for event_type, data, surface_op in TURN:
                handle.append(event_type, data, surface_op=surface_op)
            app.flush(handle)
        first_page_ms(app, 1)  # views caught up once, outside the timing
        live = len(app.live_sessions())
        with_live = first_page_ms(app)
        for handle in app.live_sessions():
            app.close(handle)
        without_live = first_page_ms(app)
    finally:
        app.close()
    return LiveListing(sessions, live, with_live, without_live)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument(
        "--store", default=None, help="default: a temporary SQLite file"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        store = args.store or f"sqlite:///{os.path.join(directory, 'live.db')}"
        print(measure(store, args.sessions).line())


if __name__ == "__main__":
    main()
