"""Request loads shared by the concurrency tests and ``python -m tests.service.figures``.

Each load records which requests succeeded, which failed on purpose, and any
other error (which must not happen).
"""

from __future__ import annotations

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlog.application import AsyncSessions, Sessions
from tests.scenarios.harness import TE, TS, add
from tests.service.requests import RequestFailedError, write_turn

if TYPE_CHECKING:
    from agentlog.application import SessionHandle

FAIL_RATE = 0.2


@dataclass
class Outcome:
    succeeded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    max_stall: float = 0.0

    def merge(self, other: Outcome) -> None:
        self.succeeded += other.succeeded
        self.failed += other.failed
        self.unexpected += other.unexpected
        self.max_stall = max(self.max_stall, other.max_stall)


def session_ids(count: int) -> list[str]:
    return [f"svc-{index}" for index in range(count)]


def plan(
    worker: str, requests: int, sessions: int, seed: int
) -> list[tuple[str, str, bool]]:
    """(session, request id, fails?) for each request of one worker."""
    rng = random.Random(seed)
    ids = session_ids(sessions)
    return [
        (rng.choice(ids), f"{worker}-r{index}", rng.random() < FAIL_RATE)
        for index in range(requests)
    ]


def run_plan(
    app: Sessions, steps: list[tuple[str, str, bool]], *, retry: bool
) -> Outcome:
    outcome = Outcome()
    for session_id, request_id, fail in steps:
        try:
            if retry:
                _create_once(app, session_id)

                def request(
                    handle: SessionHandle, r: str = request_id, f: bool = fail
                ) -> None:
                    write_turn(handle, r, fail=f)

                app.run_with_retry(session_id, request, wait=0.005)
            else:
                with app.command(session_id, create=True) as handle:
                    write_turn(handle, request_id, fail=fail)
        except RequestFailedError:
            outcome.failed.append(request_id)
        except Exception as error:
            outcome.unexpected.append(f"{request_id}: {type(error).__name__}: {error}")
        else:
            outcome.succeeded.append(request_id)
    return outcome


def _create_once(app: Sessions, session_id: str) -> None:
    """Across processes a session is created by whoever gets there first."""
    from agentlog.domain.errors import SessionConflictError

    if app.is_stored(session_id) or app.live_session(session_id) is not None:
        return
    try:
        with app.command(session_id, create=True) as handle:
            if handle.seq == 0:  # another process may have created it meanwhile
                add(handle, TS(1), TE(1))
    except SessionConflictError:
        pass


def threaded_load(
    app: Sessions, *, threads: int, requests: int, sessions: int
) -> Outcome:
    """``threads`` threads sharing one ``Sessions``, one command per request."""
    with ThreadPoolExecutor(threads) as pool:
        futures = [
            pool.submit(
                run_plan, app, plan(f"t{i}", requests, sessions, i), retry=False
            )
            for i in range(threads)
        ]
        outcome = Outcome()
        for future in futures:
            outcome.merge(future.result())
    return outcome


def process_worker(args: tuple[str, int, int, int]) -> Outcome:
    """One process of the multi-process load (spawned: opens its own Sessions)."""
    url, index, requests, sessions = args
    app = Sessions(store=url)
    try:
        return run_plan(
            app, plan(f"p{index}", requests, sessions, 1000 + index), retry=True
        )
    finally:
        app.close()


async def async_load(
    app: AsyncSessions, *, tasks: int, requests: int, sessions: int
) -> Outcome:
    """``tasks`` concurrent tasks; the longest event-loop stall is measured."""
    outcome = Outcome()
    stop = asyncio.Event()

    async def ticker() -> None:
        tick = 0.005
        while not stop.is_set():
            started = time.perf_counter()
            await asyncio.sleep(tick)
            outcome.max_stall = max(
                outcome.max_stall, time.perf_counter() - started - tick
            )

    async def one(steps: list[tuple[str, str, bool]]) -> None:
        for session_id, request_id, fail in steps:
            try:
                async with app.command(session_id, create=True) as handle:
                    write_turn(handle, request_id, fail=fail)
            except RequestFailedError:
                outcome.failed.append(request_id)
            except Exception as error:
                outcome.unexpected.append(
                    f"{request_id}: {type(error).__name__}: {error}"
                )
            else:
                outcome.succeeded.append(request_id)

    watcher = asyncio.create_task(ticker())
    await asyncio.gather(
        *(one(plan(f"a{i}", requests, sessions, 5000 + i)) for i in range(tasks))
    )
    stop.set()
    await watcher
    return outcome
