"""Crash repair: the events that close a turn a crash left open (docs/repair.md).

:class:`RepairTracker` keeps the scan state incrementally, so a live session knows
its closers without rescanning; :func:`interrupted_turn_closers` is the pure form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlog.domain.json import Envelope, Json

INTERRUPTED_TEXT: Final = "Tool call interrupted by a crash; no result was recorded."


def _get(data: Json, key: str) -> Json:
    return data.get(key) if type(data) is dict else None


class RepairTracker:
    """The repair scan state: open turn and step, and the calls still owed a result.

    ``pending`` maps a call id to ``(step, call_seq)`` in the order the calls were
    first registered; re-registering an id keeps its place and drops ``call_seq``.
    """

    __slots__ = ("open_step", "open_turn", "pending")

    def __init__(self) -> None:
        self.open_turn: Json = None
        self.open_step: Json = None
        self.pending: dict[str, tuple[Json, int | None]] = {}

    def apply(self, event: Envelope) -> None:
        """Fold one logged event into the scan state (any type; never raises)."""
        event_type = event.get("type")
        data = event.get("data")
        if event_type == "turn/start":
            self.open_turn = _get(data, "turn")
            self.open_step = None
            self.pending.clear()
        elif event_type == "turn/end":
            self.open_turn = None
            self.open_step = None
            self.pending.clear()
        elif event_type == "step/start":
            self.open_step = _get(data, "step")
        elif event_type == "step/end":
            self.pending.clear()
            self.open_step = None
        elif event_type == "assistant/message":
            content = _get(data, "content")
            if type(content) is list:
                step = _get(data, "step")
                for block in content:
                    if type(block) is dict and block.get("type") == "tool-call":
                        call_id = block.get("id")
                        if type(call_id) is str:
                            self.pending[call_id] = (step, None)
        elif event_type == "tool/call":
            call_id = _get(data, "callId")
            if type(call_id) is str and call_id in self.pending:
                self.pending[call_id] = (self.pending[call_id][0], event.get("seq"))
        elif event_type == "tool/result":
            call_id = _get(data, "callId")
            if type(call_id) is str:
                self.pending.pop(call_id, None)

    def closers(self, next_seq: int, time: Json) -> list[Envelope]:
        """The closing events for an open turn, seqs from ``next_seq``, or ``[]``.

        In order: one interrupted result per pending call, ``step/end`` when a step
        is open, then ``turn/end`` with reason ``interrupted``.
        """
        turn = self.open_turn
        if turn is None:
            return []
        closers: list[Envelope] = []
        seq = next_seq
        for call_id, (step, call_seq) in self.pending.items():
            result: Envelope = {
                "type": "tool/result",
                "seq": seq,
                "time": time,
                "data": {
                    "turn": turn,
                    "step": step,
                    "callId": call_id,
                    "content": [{"type": "text", "text": INTERRUPTED_TEXT}],
                    "isError": True,
                    "error": {"name": "InterruptedError", "code": "interrupted"},
                },
                "surfaceOp": "append",
            }
            if call_seq is not None:
                result["sourceEventSeqs"] = [call_seq]
            closers.append(result)
            seq += 1
        if self.open_step is not None:
            closers.append(
                {
                    "type": "step/end",
                    "seq": seq,
                    "time": time,
                    "data": {"turn": turn, "step": self.open_step},
                }
            )
            seq += 1
        closers.append(
            {
                "type": "turn/end",
                "seq": seq,
                "time": time,
                "data": {"turn": turn, "reason": {"kind": "interrupted"}},
            }
        )
        return closers

    def to_state(self) -> Json:
        """The scan state as JSON (for snapshots); pending keeps its order."""
        return {
            "openTurn": self.open_turn,
            "openStep": self.open_step,
            "pending": [
                [call_id, step, call_seq]
                for call_id, (step, call_seq) in self.pending.items()
            ],
        }

    @classmethod
    def from_state(cls, state: Json) -> RepairTracker:
        """Rebuild from :meth:`to_state` output."""
        tracker = cls()
        tracker.open_turn = state["openTurn"]
        tracker.open_step = state["openStep"]
        tracker.pending = {
            call_id: (step, call_seq) for call_id, step, call_seq in state["pending"]
        }
        return tracker


def interrupted_turn_closers(events: Sequence[Envelope]) -> list[Envelope]:
    """The events that close the last turn of ``events`` if a crash left it open."""
    if not events:
        return []
    tracker = RepairTracker()
    for event in events:
        tracker.apply(event)
    last = events[-1]
    return tracker.closers(last["seq"] + 1, last["time"])
