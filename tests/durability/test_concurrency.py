"""Concurrent writers: four processes append to one session at once.

docs/persistence.md#concurrency: "a save that conflicts (another writer appended) raises a clear
concurrency error; nothing is merged silently"; docs/persistence.md#concurrency: a conflict marks
the handle stale, the caller reloads and re-applies — ``Sessions.run_with_retry``.

What the writers append. Every command leaves the stored log balanced, so no
writer's take-over ever repairs another writer's work: the writers use
``Sessions(invariants=False)`` and append one log-only note (``writer/note``, a
family outside the core) per command, never a turn. Had a command appended only
part of a turn (say ``turn/start`` now and ``turn/end`` in a later command), the
open turn would sit in the store between the two, and any other writer reloading
after a conflict would take it over and close it with an ``interrupted``
``turn/end`` — the owner's next flush would then conflict and its re-applied
``turn/end`` would name a turn that is no longer open. Whole turns per command
(``turn/start`` … ``turn/end`` in one flush) would be equally safe.

Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentlog.application import Sessions
from tests.durability.workers import (
    NOTE_TYPE,
    WriterResult,
    note,
    plain_writer,
    retry_writer,
)

if TYPE_CHECKING:
    from collections.abc import Callable

import pytest

pytestmark = pytest.mark.slow  # writer processes

WRITERS = 4
NOTES_PER_WRITER = 500
BATCHES_PER_WRITER = 150
JOIN_TIMEOUT = 300.0
# Every conflict reloads the session: its latest snapshot plus the tail. A short
# interval keeps that tail short, so the test spends its time contending, not
# decoding (with the default of 500 the PostgreSQL run is markedly slower).
SNAPSHOT_INTERVAL = "50"
# Four writers appending as fast as they can is far past any agent's load: the
# worst command needed 40-97 attempts on PostgreSQL (the table lock queues the
# writers fairly, and each reloads before it waits) and up to 19 on SQLite, so the
# helper's default of 20 gives up. The figures print the worst case seen.
RETRY_ATTEMPTS = 1000

_CONTEXT = multiprocessing.get_context("spawn")


def run_writers(
    target: Callable[..., None],
    env: dict[str, str],
    session_id: str,
    count: int,
    *extra: Any,
) -> list[WriterResult]:
    """Start the writers, release them together, and collect their results."""
    barrier = _CONTEXT.Barrier(WRITERS)
    results: Any = _CONTEXT.Queue()
    processes = [
        _CONTEXT.Process(
            target=target,
            args=(env, session_id, writer, count, barrier, results, *extra),
            daemon=True,
        )
        for writer in range(WRITERS)
    ]
    for process in processes:
        process.start()
    try:
        collected = [results.get(timeout=JOIN_TIMEOUT) for _ in processes]
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.kill()
                process.join()
    errors = [result.error for result in collected if result.error]
    assert not errors, "\n".join(errors)
    return sorted(collected, key=lambda result: result.writer)


def writer_env(store_env: dict[str, str]) -> dict[str, str]:
    # The parent makes the tables once; concurrent DDL can race on PostgreSQL.
    return {
        **store_env,
        "CREATE_TABLE": "false",
        "AGENTLOG_SNAPSHOT_INTERVAL": SNAPSHOT_INTERVAL,
    }


def figures_line(label: str, results: list[WriterResult], seconds: float) -> str:
    per_writer = ", ".join(
        f"w{r.writer}: {r.attempts} attempts/{r.conflicts} conflicts/"
        + (f"at most {r.most_attempts} per command/" if r.most_attempts else "")
        + f"{r.seconds:.1f}s"
        for r in results
    )
    return (
        f"{label}: conflicts={sum(r.conflicts for r in results)} "
        f"wall={seconds:.1f}s ({per_writer})"
    )


def test_four_writers_with_the_retry_helper_lose_and_duplicate_nothing(
    store_env: dict[str, str], shared_backend: str
) -> None:
    session_id = "contended"
    reader = Sessions(env=store_env, invariants=False)
    began = time.perf_counter()
    results = run_writers(
        retry_writer,
        writer_env(store_env),
        session_id,
        NOTES_PER_WRITER,
        RETRY_ATTEMPTS,
    )
    seconds = time.perf_counter() - began
    try:
        events = reader.read_events(session_id)
    finally:
        reader.close()
    print(
        "\n"
        + figures_line(
            f"retry[{shared_backend}] events={len(events)}", results, seconds
        )
    )

    assert len(events) == WRITERS * NOTES_PER_WRITER
    assert [event["seq"] for event in events] == list(range(len(events)))
    assert {event["type"] for event in events} == {NOTE_TYPE}
    notes = [(event["data"]["writer"], event["data"]["n"]) for event in events]
    assert len(set(notes)) == len(notes), "a note was stored twice"
    assert set(notes) == {
        (writer, number)
        for writer in range(WRITERS)
        for number in range(NOTES_PER_WRITER)
    }
    # Each writer's commands ran in order, so its notes are stored in order.
    for writer in range(WRITERS):
        numbers = [number for who, number in notes if who == writer]
        assert numbers == sorted(numbers)
    # Contention really happened (the figures say how much).
    assert sum(result.conflicts for result in results) > 0


def test_four_writers_without_retry_get_the_typed_error_and_lose_nothing(
    store_env: dict[str, str], shared_backend: str
) -> None:
    session_id = "contended-plain"
    setup = Sessions(env=store_env, invariants=False)
    handle = setup.create_session(session_id=session_id)
    handle.append(NOTE_TYPE, note(-1, 0))
    setup.close(handle)  # a live handle here would hide the others' events
    began = time.perf_counter()
    results = run_writers(
        plain_writer,
        writer_env(store_env),
        session_id,
        BATCHES_PER_WRITER,
    )
    seconds = time.perf_counter() - began
    try:
        events = setup.read_events(session_id)
    finally:
        setup.close()
    print(
        "\n"
        + figures_line(
            f"plain[{shared_backend}] events={len(events)}", results, seconds
        )
    )

    assert [event["seq"] for event in events] == list(range(len(events)))
    stored = [event["data"] for event in events[1:]]
    batches: Counter[tuple[int, int]] = Counter(
        (data["writer"], data["n"]) for data in stored
    )
    acked = {
        (result.writer, number): (first, size)
        for result in results
        for number, first, size in result.acked
    }
    refusals = [
        (result.writer, refusal) for result in results for refusal in result.refused
    ]
    refused = {(writer, refusal.number) for writer, refusal in refusals}
    # Every acknowledged batch is stored whole, in order, where its flush put it.
    for (writer, number), (first, size) in acked.items():
        assert [e["data"] for e in events[first : first + size]] == [
            note(writer, number, part, size) for part in range(size)
        ]
    # Nothing else is stored: no refused batch, not even a part of one (no merge).
    assert set(batches) == set(acked)
    assert sum(batches.values()) == len(events) - 1
    assert not refused & set(batches)
    # Each refusal is the typed error naming the session and the seq the batch
    # expected, which another writer holds; the stale handle kept the refused batch
    # as pending (the caller can re-apply it) and refused further appends.
    for writer, refusal in refusals:
        assert refusal.session_id == session_id
        assert refusal.expected_seq == refusal.first
        assert refusal.message.startswith(
            f'append seq mismatch for "{session_id}": expected {refusal.first} '
        )
        assert events[refusal.expected_seq]["data"]["writer"] != writer
        assert refusal.stale
        assert refusal.pending_kept
        assert refusal.append_refused
    assert len(acked) + len(refused) == WRITERS * BATCHES_PER_WRITER
    assert sum(result.conflicts for result in results) == len(refused) > 0
