"""The child-process programs of the durability tests, and the workload they write.

Each ``*_writer`` function is the ``target`` of a :class:`multiprocessing.Process`:
it opens its own ``Sessions`` on a shared store (SQLite file or PostgreSQL schema)
from the environment it is given, and never shares a connection with the parent.

The crash writer's workload is deterministic so the parent can check, after a
SIGKILL, not just *how many* events survived but *which*: ``agent_events(turn)``
regenerates exactly what a child appended from the turn it reported at start, and
``batch_size(seq)`` regenerates where each flush (one transaction) began and ended.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlog.application import Sessions
from agentlog.domain.errors import (
    SessionAlreadyExistsError,
    SessionConflictError,
    StaleSessionError,
)

if TYPE_CHECKING:
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Barrier

    from agentlog.application.handle import SessionHandle

AppendArgs = tuple[str, dict[str, Any], Any]
"""One ``handle.append(type, data, surface_op)`` call."""

USER: dict[str, Any] = {"kind": "user"}
MAX_BATCH = 16
NOTE_TYPE = "writer/note"
"""A log-only type outside every core family: needs no turn and is never repaired."""


# --------------------------------------------------------------------- workload


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def agent_turn(turn: int) -> list[AppendArgs]:
    """One agent turn as the loop writes it: 16 events, two steps, one tool call.

    Batches cut turns at every position, so a kill can leave a turn open before,
    inside and after a step, and with a tool call still pending (the repair then
    appends a synthetic ``tool/result`` for it).
    """
    call_id = f"call-{turn}"

    def chunk(step: int, text: str) -> AppendArgs:
        delta = {"type": "text-delta", "index": 0, "text": text}
        return ("assistant/chunk", {"turn": turn, "step": step, "chunk": delta}, None)

    tool_call = {"type": "tool-call", "id": call_id, "name": "bash", "arguments": "{}"}
    return [
        (
            "turn/start",
            {"turn": turn, "trigger": {"kind": "message", "source": USER}},
            None,
        ),
        (
            "user/message",
            {"content": _text(f"prompt {turn}"), "source": USER},
            "append",
        ),
        ("step/start", {"turn": turn, "step": 1}, None),
        chunk(1, "let me "),
        chunk(1, "look"),
        chunk(1, "..."),
        (
            "assistant/message",
            {"turn": turn, "step": 1, "content": [tool_call]},
            "append",
        ),
        (
            "tool/call",
            {
                "turn": turn,
                "step": 1,
                "callId": call_id,
                "name": "bash",
                "arguments": "{}",
            },
            None,
        ),
        (
            "tool/result",
            {
                "turn": turn,
                "step": 1,
                "callId": call_id,
                "content": _text(f"output {turn}"),
                "isError": False,
            },
            "append",
        ),
        ("step/end", {"turn": turn, "step": 1}, None),
        ("step/start", {"turn": turn, "step": 2}, None),
        chunk(2, "done "),
        chunk(2, f"{turn}"),
        (
            "assistant/message",
            {"turn": turn, "step": 2, "content": _text(f"done {turn}")},
            "append",
        ),
        ("step/end", {"turn": turn, "step": 2}, None),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, None),
    ]


def agent_events(first_turn: int) -> Iterator[AppendArgs]:
    """Whole turns from ``first_turn`` on, forever."""
    turn = first_turn
    while True:
        yield from agent_turn(turn)
        turn += 1


def batch_size(first_seq: int) -> int:
    """How many events the crash writer flushes together from ``first_seq`` (1–16)."""
    return random.Random(first_seq).randint(1, MAX_BATCH)


def batch_ends(start: int, until: int) -> set[int]:
    """Every log length a whole number of batches from ``start`` gives, up to ``until``."""
    ends = {start}
    end = start
    while end < until:
        end += batch_size(end)
        ends.add(end)
    return ends


def append_args(handle: SessionHandle, args: AppendArgs) -> None:
    event_type, data, surface_op = args
    handle.append(event_type, data, surface_op=surface_op)


# ------------------------------------------------------------------ crash writer


def crash_writer(
    env: dict[str, str], session_id: str, report_path: str, app_name: str
) -> None:
    """Take the session over, then append and flush batches until killed.

    ``app_name`` becomes the PostgreSQL ``application_name`` of the child's
    connections (libpq reads ``PGAPPNAME``), so the parent can wait until the
    server has finished with them.

    The report file gets one line per step, each written with a single
    ``os.write`` (so a kill never leaves half a line): ``start SEQ TURN`` once the
    take-over is done, ``flush END`` before each flush and ``ack END`` after the
    flush returned. ``END`` is the log length the flush makes durable.
    """
    os.environ["PGAPPNAME"] = app_name
    fd = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        app = Sessions(env=env)
        handle = app.get_session(session_id)
        events = agent_events(handle.aggregate.turns.next_turn)
        os.write(
            fd, f"start {handle.seq} {handle.aggregate.turns.next_turn}\n".encode()
        )
        while True:
            for _ in range(batch_size(handle.seq)):
                append_args(handle, next(events))
            os.write(fd, f"flush {handle.seq}\n".encode())
            app.flush(handle)
            os.write(fd, f"ack {handle.seq}\n".encode())
    except BaseException:
        os.write(fd, ("error " + traceback.format_exc().replace("\n", " | ")).encode())
        raise


@dataclass
class CrashReport:
    """What a killed crash writer said before it died."""

    start: int | None = None
    first_turn: int = 1
    acked: int | None = None
    in_flight: int | None = None
    flushes_acked: int = 0
    error: str | None = None

    @property
    def durable(self) -> int:
        """The log length every returned flush guarantees."""
        assert self.start is not None
        return self.start if self.acked is None else self.acked


def read_report(path: str) -> CrashReport:
    report = CrashReport()
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        return report
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "start":
            seq, turn = rest.split()
            report.start, report.first_turn = int(seq), int(turn)
        elif word == "flush":
            report.in_flight = int(rest)
        elif word == "ack":
            report.acked = int(rest)
            report.in_flight = None
            report.flushes_acked += 1
        elif word == "error":
            report.error = rest
    return report


# ------------------------------------------------------------- concurrent writers


@dataclass(frozen=True)
class Refusal:
    """One conflicted flush of the plain writer, and the handle's state after it."""

    number: int
    first: int
    """The seq the batch would have started at."""
    session_id: str
    expected_seq: int
    message: str
    stale: bool
    pending_kept: bool
    append_refused: bool


@dataclass
class WriterResult:
    """What one concurrent writer did; sent back to the parent through a queue."""

    writer: int
    attempts: int = 0
    conflicts: int = 0
    most_attempts: int = 0
    """The most attempts one command needed (``run_with_retry``)."""
    seconds: float = 0.0
    acked: list[tuple[int, int, int]] = field(default_factory=list)
    """(batch number, first seq, size) of every flush that returned."""
    refused: list[Refusal] = field(default_factory=list)
    """Every flush that conflicted."""
    error: str | None = None


def note(writer: int, number: int, part: int = 0, size: int = 1) -> dict[str, Any]:
    return {"writer": writer, "n": number, "part": part, "size": size}


def retry_writer(
    env: dict[str, str],
    session_id: str,
    writer: int,
    count: int,
    barrier: Barrier,
    results: Queue[WriterResult],
    attempts: int = 20,
) -> None:
    """Append ``count`` notes, each through ``run_with_retry`` (reload, re-apply, flush).

    The first note may create the session: every writer races to, exactly one
    wins, and a loser's flush conflicts like any other (it then re-applies the
    note to the stored session with the retry helper). ``attempts`` is passed to
    ``run_with_retry``; its default is the helper's own.
    """
    result = WriterResult(writer)
    tries = 0

    def command(number: int) -> Callable[[SessionHandle], None]:
        def apply(handle: SessionHandle) -> None:
            nonlocal tries
            tries += 1
            handle.append(NOTE_TYPE, note(writer, number))

        return apply

    def done() -> None:
        nonlocal tries
        result.attempts += tries
        result.most_attempts = max(result.most_attempts, tries)
        tries = 0

    try:
        app = Sessions(env=env, invariants=False)
        barrier.wait()
        began = time.perf_counter()
        first = 0
        with contextlib.suppress(SessionAlreadyExistsError):
            handle = app.create_session(session_id=session_id)
            command(0)(handle)
            # A lost creation race conflicts like any other flush; note 0 is then
            # re-applied to the winner's session below (its tries add up).
            with contextlib.suppress(SessionConflictError):
                app.flush(handle)
                first = 1
                done()
        for number in range(first, count):
            app.run_with_retry(session_id, command(number), attempts=attempts)
            done()
        result.seconds = time.perf_counter() - began
        result.conflicts = result.attempts - count
    except BaseException:
        result.error = traceback.format_exc()
    results.put(result)


def plain_writer(
    env: dict[str, str],
    session_id: str,
    writer: int,
    count: int,
    barrier: Barrier,
    results: Queue[WriterResult],
) -> None:
    """Flush ``count`` batches of 1–3 notes with no retry; a conflicted batch is dropped.

    Each conflict is recorded with what the handle looked like afterwards (stale?
    refused batch still pending? a further append refused?) for the parent to
    check. The writer then reloads with ``get_session`` and goes on with its next
    batch.
    """
    result = WriterResult(writer)
    rng = random.Random(writer)
    try:
        app = Sessions(env=env, invariants=False)
        handle = app.get_session(session_id)
        barrier.wait()
        began = time.perf_counter()
        for number in range(count):
            if handle.stale:
                handle = app.get_session(session_id)
            size = rng.randint(1, 3)
            first = handle.seq
            batch = [note(writer, number, part, size) for part in range(size)]
            for data in batch:
                handle.append(NOTE_TYPE, data)
            result.attempts += 1
            try:
                app.flush(handle)
            except SessionConflictError as error:
                result.conflicts += 1
                result.refused.append(
                    Refusal(
                        number=number,
                        first=first,
                        session_id=error.session_id,
                        expected_seq=error.expected_seq,
                        message=str(error),
                        stale=handle.stale,
                        pending_kept=[e["data"] for e in handle.pending] == batch,
                        append_refused=_append_refused(handle),
                    )
                )
            else:
                result.acked.append((number, first, size))
        result.seconds = time.perf_counter() - began
    except BaseException:
        result.error = traceback.format_exc()
    results.put(result)


def _append_refused(handle: SessionHandle) -> bool:
    try:
        handle.append(NOTE_TYPE, {})
    except StaleSessionError:
        return True
    return False
