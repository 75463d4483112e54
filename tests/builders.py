"""The scenarios' event notation, built once for every test.

``TS(1)`` is a ``turn/start``, ``U("hi")`` a user prompt, ``A("hello")`` an assistant
message, ``Acall("c1")`` one asking for a tool, ``C``/``R`` the tool call and result,
``Rep(0, 1, [0, 1])`` a replace. Each builder returns an
:class:`agentlog.testing.Append`: the arguments of one ``append`` call, which is also a ``(type, data, surface_op,
source_event_seqs)`` tuple. :func:`log` turns a list of them into the envelopes a
session would record, for the pure functions that read logs; the scenario harness
(``tests/scenarios/harness.py``) appends them to a session.

Message builders take their content as parts: a string is a text block, a dict is
taken as the block it is, so ``A("done")`` and ``A(text("t"), call_block("c1"))``
both read naturally; no parts is empty content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.domain.session import Session
from agentlog.testing import Append

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentlog.application import Sessions
    from agentlog.domain.json import Envelope

USER: dict[str, Any] = {"kind": "user"}
PLUGIN: dict[str, Any] = {"kind": "plugin", "plugin": "watcher"}


def event(seq: int, item: Append, time: int = 1000) -> Envelope:
    """The envelope ``item`` records at ``seq``."""
    return item.envelope(seq, time)


def log(*items: Append, time: int = 1000, tick: int = 0) -> list[Envelope]:
    """The envelopes a session records for ``items``, seqs from 0.

    Event ``seq`` gets ``time + tick * seq``.
    """
    return [item.envelope(seq, time + tick * seq) for seq, item in enumerate(items)]


# ------------------------------------------------------------------ blocks


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call_block(call_id: str, name: str = "bash") -> dict[str, Any]:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": "{}"}


def replace(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def blocks(parts: tuple[str | dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [text(part) if isinstance(part, str) else part for part in parts]


# ------------------------------------------------------------------ events


def TS(turn: int = 1, trigger: Any = None, *, kind: str = "message") -> Append:
    trigger = trigger or {"kind": kind, "source": USER}
    return Append("turn/start", {"turn": turn, "trigger": trigger})


def TE(turn: int = 1, reason: Any = None) -> Append:
    if isinstance(reason, str):
        reason = {"kind": reason}
    return Append("turn/end", {"turn": turn, "reason": reason or {"kind": "completed"}})


def SS(turn: int = 1, step: int = 1) -> Append:
    return Append("step/start", {"turn": turn, "step": step})


def SE(turn: int = 1, step: int = 1) -> Append:
    return Append("step/end", {"turn": turn, "step": step})


def U(
    *parts: str | dict[str, Any],
    source: Any = None,
    op: Any = "append",
    src: Any = None,
) -> Append:
    data = {"content": blocks(parts), "source": source or USER}
    return Append("user/message", data, op, src)


def A(
    *parts: str | dict[str, Any],
    turn: int = 1,
    step: int = 1,
    op: Any = "append",
    src: Any = None,
    **extra: Any,
) -> Append:
    data = {"turn": turn, "step": step, "content": blocks(parts), **extra}
    return Append("assistant/message", data, op, src)


def Acall(call_id: str, turn: int = 1, step: int = 1) -> Append:
    return A(call_block(call_id), turn=turn, step=step)


def chunk(turn: int = 1, step: int = 1, delta: str = "x") -> Append:
    delta_chunk = {"type": "text-delta", "index": 0, "text": delta}
    return Append("assistant/chunk", {"turn": turn, "step": step, "chunk": delta_chunk})


def C(call_id: str, turn: int = 1, step: int = 1) -> Append:
    data = {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "name": "bash",
        "arguments": "{}",
    }
    return Append("tool/call", data)


def R(
    call_id: str = "c1",
    turn: int = 1,
    step: int = 1,
    *,
    op: Any = "append",
    src: Any = None,
    **extra: Any,
) -> Append:
    data = {
        "turn": turn,
        "step": step,
        "callId": call_id,
        "content": [text("ok")],
        "isError": False,
        **extra,
    }
    return Append("tool/result", data, op, src)


def Rep(start: int, end: int, src: Any, value: str = "summary") -> Append:
    """An assistant message replacing the surface span ``start..end``."""
    return A(value, op=replace(start, end), src=src)


def message(event_type: str, value: str = "x", source: Any = None) -> Append:
    """A context or steering message (``turn`` 1) from a plugin source."""
    data = {"turn": 1, "content": [text(value)], "source": source or PLUGIN}
    return Append(event_type, data, "append")


def turn1(time: int = 1000, tick: int = 0) -> list[Envelope]:
    """The balanced 6-event log of the persistence scenarios (seqs 0-5)."""
    return log(
        TS(1), U("hi"), SS(1, 1), A("hello"), SE(1, 1), TE(1), time=time, tick=tick
    )


ROWS_PER_INSERT = 4000


def store_directly(
    app: Sessions, sessions: Iterable[tuple[str, dict[str, Any], list[Envelope]]]
) -> None:
    """Store ``(session id, header, seed)`` sessions straight through the recorder,
    some ``ROWS_PER_INSERT`` rows per insert: a large store in seconds, for the
    retention tests and the benchmarks (no views are caught up)."""
    rows: list[Any] = []
    for session_id, header, seed in sessions:
        session = Session.create(session_id, header, seed=seed)
        rows += [app.mapper.to_stored_event(e) for e in session.pending_events]
        if len(rows) >= ROWS_PER_INSERT:
            app.recorder.insert_events(rows)
            rows = []
    if rows:
        app.recorder.insert_events(rows)
