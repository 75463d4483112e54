"""``agentlog worker``: killed mid-stream and restarted, nothing twice or skipped.

The worker runs as a process on a PostgreSQL schema holding a log it has not
folded yet. It is killed with SIGKILL while its views are part way, restarted,
and stopped with SIGTERM once its status line says the views are current. The
views it left must be exactly what a rebuild from position 0 gives: a
notification applied twice would count a session's events twice or index a
document twice (its key is unique), one skipped would be missing.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.application.search_index import search_index_of
from agentlog.infrastructure.store import parse_store_url, rebuild_views
from tests.conftest import PG_URL, postgres_schema
from tests.query.support import ev, header, raw_write_many
from tests.scenarios.harness import U

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

STATUS = re.compile(r"log at (\d+), (current|behind by \d+): (.*)")


@pytest.fixture
def url() -> Iterator[str]:
    for schema in postgres_schema("w_"):
        yield f"{PG_URL}?schema={schema}"


class Worker:
    """An ``agentlog worker`` process and its status lines, read as they come."""

    def __init__(self, url: str, batch: int | None = None) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if batch is not None:
            env["AGENTLOG_WORKER_BATCH"] = str(batch)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentlog", "--store", url, "worker"]
            + ["--status-every", "0.1"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, test: Any, timeout: float = 240) -> re.Match[str]:
        """The first status line ``test`` accepts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, self.seen
                continue
            self.seen.append(line)
            match = STATUS.search(line)
            if match and test(match):
                return match
        raise AssertionError(self.seen[-5:])


def positions(match: re.Match[str]) -> list[int]:
    return [int(n) for n in re.findall(r" (\d+) \(lag", match.group(3))]


def views_state(url: str) -> tuple[Any, ...]:
    """The listing's rows and the index's documents, as the views hold them."""
    app = Sessions(env=parse_store_url(url).env)
    try:
        listing = views_of(app).listing.view
        index = search_index_of(app)
        assert index is not None
        rows = sorted(repr(row) for row in listing.select_all())
        return rows, index.search.view.documents()
    finally:
        app.close()


def test_a_killed_worker_resumes_with_nothing_twice_and_nothing_skipped(
    url: str,
) -> None:
    app = Sessions(env=parse_store_url(url).env)
    try:
        logs = [
            (
                header(f"s{n:04}", created_at=n),
                [
                    ev(seq, U(f"note {n} step {seq} alpha"), 100 + seq)
                    for seq in range(20)
                ],
            )
            for n in range(150)
        ]
        for start in range(0, len(logs), 50):
            raw_write_many(app, logs[start : start + 50])
    finally:
        app.close()
    # Small batches, so the status lines (every 0.1 s) see it part way even
    # on an idle machine, where batches of 500 fold this log at once.
    first = Worker(url, batch=10)
    # Part way: some view has folded some, not all, of the log.
    first.wait_for(lambda m: any(0 < p < int(m.group(1)) for p in positions(m)))
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=30)
    second = Worker(url)
    second.wait_for(lambda m: m.group(2) == "current" and int(m.group(1)) > 0)
    second.process.send_signal(signal.SIGTERM)
    assert second.process.wait(timeout=60) == 0
    time.sleep(0.2)
    assert any("stopped" in line for line in [*second.seen, *_drain(second)])
    kept = views_state(url)
    rebuild_views(url)
    assert views_state(url) == kept


def _drain(worker: Worker) -> list[str]:
    out = []
    while not worker.lines.empty():
        out.append(worker.lines.get())
    return out


def test_the_worker_refuses_a_store_that_cannot_subscribe(tmp_path: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentlog", "--store", f"sqlite:///{tmp_path}/a.db"]
        + ["worker"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "a view worker needs a store that can subscribe, not 'eventsourcing.sqlite'"
    ]
