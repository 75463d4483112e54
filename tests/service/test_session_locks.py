"""Per-session locks under churn: one holder at a time, every release succeeds.

Found as an intermittent ``RuntimeError: session "svc-4" is not held by this
owner`` in the thread load of ``test_concurrency.py``. A release drops the
session's lock entry once nobody holds or awaits it, but it does so after
letting go of the entry: in between, other threads could take the entry, give
it back, drop it and make a new one that a fourth thread holds, and the late
drop then removed that new, held entry. The holder's release failed, and the
next caller got a second entry, so two commands could hold one session.

The window is a few bytecodes wide, so the test widens the odds instead of
waiting for time: a tiny thread switch interval and many threads, most of them
polling (``try_hold``, the idle flusher's way) so entries are made and dropped
all the time. Before the fix a single run of this load failed about two times
in five; the test runs it ten times.
"""

from __future__ import annotations

import random
import sys
import threading
from typing import TYPE_CHECKING

import pytest

from agentlog.application.locks import SessionLocks

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow  # about 5 s of thread churn

THREADS = 16
ROUNDS = 3000
POLLING = 0.9  # the share of takes that are try_hold
RUNS = 10


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def churn(locks: SessionLocks) -> list[str]:
    """Every thread takes and gives back one session; what went wrong."""
    problems: list[str] = []
    holders: set[int] = set()

    def work(index: int) -> None:
        owner = ("thread", index)
        rng = random.Random(index)
        try:
            for _ in range(ROUNDS):
                if rng.random() < POLLING:
                    if not locks.try_hold("s", owner):
                        continue
                else:
                    locks.acquire("s", owner, 30.0)
                holders.add(index)
                if holders != {index}:
                    problems.append(f"held by {sorted(holders)} at once")
                holders.discard(index)
                locks.release("s", owner)
        except Exception as error:  # the test reports any
            problems.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60.0)
        if thread.is_alive():
            problems.append("a thread still waits for the session")
    return problems


@pytest.mark.usefixtures("frequent_switches")
def test_one_holder_at_a_time_and_every_release_succeeds() -> None:
    for _ in range(RUNS):
        locks = SessionLocks()
        assert churn(locks) == []
        assert not locks.is_held("s")
        assert locks.owner_of("s") is None
