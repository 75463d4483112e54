"""``erase_older_than``: a store of 10,000 sessions, half old; the old half goes,
except the sessions written to while it runs (docs/erasure.md#retention).

``AGENTLOG_ERASURE_SESSIONS`` changes the store's size (10,000 by default).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import SessionErasedError, SessionError, SessionNotFoundError
from agentlog.application.catch_up import views_of
from agentlog.application.erasure import GC_BATCH, cutoff_before, parse_duration
from agentlog.application.search_index import search_index_of
from agentlog.domain.session import make_header, now_ms
from tests.builders import TE, TS, U, store_directly
from tests.erasure.support import append_turn

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agentlog import Sessions
    from agentlog.domain.json import Envelope

    MakeApp = Callable[..., Sessions]

SESSIONS = int(os.environ.get("AGENTLOG_ERASURE_SESSIONS", "10000"))
DAY = 86_400_000
PATIENT = {"SQLITE_LOCK_TIMEOUT": "600"}
"""SQLite's busy timeout in seconds: a bound on waiting for the write lock."""


def generate(app: Sessions, count: int, now: int) -> tuple[list[str], list[str]]:
    """``count`` stored sessions, every other one last written 40 days ago (the
    rest yesterday), written straight through the recorder in big batches."""
    old: list[str] = []
    new: list[str] = []

    def sessions() -> Iterator[tuple[str, dict[str, Any], list[Envelope]]]:
        for number in range(count):
            session_id = f"s{number:05d}"
            is_old = number % 2 == 0
            (old if is_old else new).append(session_id)
            time = now - (40 if is_old else 1) * DAY
            header = make_header(session_id, created_at=time, cwd="/srv/app")
            seed = [
                item.envelope(seq, time + seq)
                for seq, item in enumerate((TS(1), U(f"prompt {number}"), TE(1)))
            ]
            yield session_id, header, seed

    store_directly(app, sessions())
    return old, new


def listed(app: Sessions) -> set[str]:
    search_index_of(app)  # its tables exist too
    views = views_of(app)
    views.catch_up()
    return {row.session_id for row in views.listing.view.select_all() if row.header}


@pytest.mark.slow
def test_the_old_half_goes_and_sessions_written_meanwhile_stay(
    make_app: MakeApp,
) -> None:
    # On SQLite a writer waits for gc's batch transaction, and gc for the
    # writers': however slow the machine, they wait rather than fail with
    # "database is locked" (the default busy timeout is 5 s).
    app, writer = make_app(**PATIENT), make_app(**PATIENT)
    now = now_ms()
    old, new = generate(app, SESSIONS, now)
    # Appended to after gc chose its candidates, before their batch ran.
    late = old[len(old) // 2 :: max(len(old) // 20, 1)]
    assert all(old.index(key) >= GC_BATCH for key in late)
    # Appended to by another thread while gc runs, whenever it gets there: one
    # round over these per batch gc finishes, run while gc goes on with the next.
    # Paced by gc's progress, not by the clock: a writer that never paused would
    # starve SQLite's other writers (its lock is not fair) on a slow machine.
    racing = old[1 : len(old) // 2 : max(len(old) // 20, 1)]
    landed: set[str] = set()
    rounds = threading.Semaphore(1)  # the first round races the first batch
    done = threading.Event()
    errors: list[BaseException] = []

    def race() -> None:
        try:
            while rounds.acquire() and not done.is_set():
                for key in racing:
                    try:
                        with writer.command(key) as handle:
                            append_turn(handle, "racing")
                        landed.add(key)
                    except (SessionErasedError, SessionNotFoundError):
                        pass
        except BaseException as error:  # the test fails on it below
            errors.append(error)

    calls: list[tuple[int, int]] = []

    def progress(count: int, total: int) -> None:
        if not calls:
            for key in late:
                with writer.command(key) as handle:
                    append_turn(handle, "late")
        calls.append((count, total))
        rounds.release()

    listed(app)  # the views exist and are current before the race starts
    racer = threading.Thread(target=race)
    racer.start()
    try:
        report = app.erase_older_than(
            cutoff_before(30 * DAY, now), reason="retention", progress=progress
        )
    finally:
        done.set()
        rounds.release()
        racer.join()
    assert errors == []

    assert set(report.candidates) <= set(old)
    kept = set(late) | landed
    assert set(report.erased) == set(old) - kept
    assert set(late) <= set(report.kept)
    assert listed(app) == set(new) | kept
    assert calls[-1] == (len(report.candidates), len(report.candidates))
    for key in kept:  # every acknowledged append is still there
        assert app.read_events(key)[-1]["type"] == "turn/end"
    assert {e.session_id for e in app.erasures()} == set(report.erased)


def test_a_dry_run_erases_nothing(make_app: MakeApp) -> None:
    app = make_app()
    now = now_ms()
    old, new = generate(app, 40, now)
    report = app.erase_older_than(
        cutoff_before(30 * DAY, now), reason="retention", dry_run=True
    )
    assert report.candidates == old
    assert report.erased == []
    assert listed(app) == set(old) | set(new)
    assert app.erasures() == []


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30d", 30 * DAY), ("12h", 12 * 3_600_000), ("90m", 90 * 60_000), ("5s", 5000)],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "30", "d", "-3d", "1.5h", "3w", "٣d", "30 d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="a duration is a whole number and a unit"):
        parse_duration(text)


def test_a_cutoff_must_be_epoch_ms(make_app: MakeApp) -> None:
    app = make_app()
    with pytest.raises(SessionError, match="epoch milliseconds"):
        app.erase_older_than(1.5, reason="x")  # type: ignore[arg-type]
