"""Writing an agent loop: turns and steps whose bookkeeping agentlog does.

A loop opens a turn (``app.turn(session_id, user=...)``), opens steps in it (one
model call and the tools it asked for), records what the model said and what the
tools returned, and ends the turn. This module numbers turns and steps, sets every
surface marker and provenance list, pairs each tool result with its call and
writes the events in the order the turn invariants expect, so a loop never
touches an envelope (docs/agents.md).

Each step is one unit of work with :meth:`Sessions.command`'s contract (a step
that raises stores nothing); with ``unit="turn"`` the whole turn is one. The
writing methods do no I/O; only entering and leaving a unit touches the store,
which is why :class:`Turn` and :class:`AsyncTurn` differ only there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from agentlog.domain.errors import (
    AgentlogError,
    InvariantError,
    NonJsonDataError,
    SessionError,
)
from agentlog.domain.json import NotJsonError, snapshot_json
from agentlog.domain.step_output import (
    Content,
    ToolCall,
    arguments_text,
    assemble_chunks,
    content_blocks,
)
from agentlog.domain.strict_types import check_strict_type
from agentlog.domain.vocabulary import check_payload

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from types import TracebackType

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Json

logger = logging.getLogger(__name__)

Reason = str | Mapping[str, Any]
"""A turn-end reason: its kind (``"completed"``) or the whole reason object."""
Unit = Literal["step", "turn"]
Pending = tuple[str, "Json", Any]
"""An event added between units: type, data, surface marker."""

USER: Final[dict[str, Any]] = {"kind": "user"}
WRITER_TYPES: Final = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "user/message",
        "context/message",
        "steering/message",
    }
)
"""Types the writer itself writes (``event()`` refuses them: use their method)."""
_ABORTS: Final = (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit)


def _checked(event_type: str, data: object) -> Json:
    """A lossless copy of ``data`` that passes its type's model (checked early, so
    an event queued for the next unit fails where it is given)."""
    try:
        copy = snapshot_json(data)
    except NotJsonError:
        msg = f'session event "{event_type}" carries non-JSON-serializable data'
        raise NonJsonDataError(msg) from None
    check_payload(event_type, copy)
    return copy


def _reason(reason: Reason) -> dict[str, Any]:
    return {"kind": reason} if isinstance(reason, str) else dict(reason)


# ------------------------------------------------------------------- steps


class StepBase:
    """One model call and its tool runs: the writing half, shared by both APIs."""

    def __init__(self, turn: TurnBase) -> None:
        self.turn = turn
        self.number = 0
        """The step's number in its turn (set when the step opens)."""
        self._handle: SessionHandle | None = None
        self._blocks: list[Any] = []
        self._usage: Json = None
        self._provenance: Json = None
        self._chunks: list[Any] = []
        self._chunk_seqs: list[int] = []
        self._call_ids: set[str] = set()
        self._calls: dict[str, tuple[ToolCall, int]] = {}
        self._answered: set[str] = set()
        self._sealed = False
        self._carried: list[Pending] = []
        self.message_seq: int | None = None
        """The seq of the step's ``assistant/message`` once it is written."""

    # The unit's edges (called by the sync and async subclasses).

    def _begin(self, handle: SessionHandle) -> None:
        self._handle = handle
        self._carried = self.turn._write_pending(handle)
        turns = handle.aggregate.turns
        number = turns.next_step
        if turns.open_turn != self.turn.number or turns.open_step is not None:
            msg = (
                f"step/start in turn {self.turn.number} but open is turn "
                f"{json.dumps(turns.open_turn)}/step {json.dumps(turns.open_step)}"
            )
            raise InvariantError(msg)
        self.number = number
        self.turn._last_step = number
        self._append("step/start", self._where())

    def _finish(self) -> None:
        self._seal()
        self._append("step/end", self._where())

    def _leave(self, *, failed: bool) -> None:
        self._handle = None
        if failed:
            # The unit stored nothing: what it carried goes with the next one.
            self.turn._pending[:0] = self._carried
        self._carried = []
        if self.turn._step is self:
            self.turn._step = None

    def _where(self) -> dict[str, Any]:
        return {"turn": self.turn.number, "step": self.number}

    def _live(self) -> SessionHandle:
        if self._handle is None:
            msg = f"step {self.number} of turn {self.turn.number} is not open"
            raise SessionError(msg)
        return self._handle

    def _append(
        self,
        event_type: str,
        data: Any,
        surface_op: Any = None,
        sources: list[int] | None = None,
    ) -> int:
        envelope = self._live().append(
            event_type, data, surface_op=surface_op, source_event_seqs=sources
        )
        return int(envelope["seq"])

    def _unsealed(self, what: str) -> None:
        self._live()
        if self._sealed:
            msg = (
                f"step {self.number} of turn {self.turn.number} already recorded its "
                f"assistant message; {what} must come before its first tool result"
            )
            raise SessionError(msg)

    # Recording the model's output.

    def chunk(self, chunk: Mapping[str, Any]) -> int:
        """Record one streamed chunk (``assistant/chunk``); returns its seq.

        Chunks are cited by the step's assistant message, which is assembled from
        them when :meth:`assistant` and :meth:`tool_call` give nothing.
        """
        self._unsealed("a chunk")
        data = {**self._where(), "chunk": chunk}
        seq = self._append("assistant/chunk", data)
        recorded = snapshot_json(chunk)
        self._chunks.append(recorded)
        self._chunk_seqs.append(seq)
        reason = recorded.get("reason") if isinstance(recorded, dict) else None
        if isinstance(reason, dict) and reason.get("kind") == "max-tokens":
            self.turn._max_tokens = True
        if isinstance(recorded, dict) and recorded.get("type") == "usage":
            self._usage = recorded.get("usage")
        return seq

    def assistant(
        self,
        text: str | None = None,
        *,
        reasoning: str | None = None,
        content: Sequence[Mapping[str, Any]] = (),
        usage: Mapping[str, Any] | None = None,
        model: tuple[str, str] | None = None,
        max_tokens: bool = False,
    ) -> None:
        """Add the model's output: reasoning, then text, then any other blocks.

        Everything a step's model call produced is one ``assistant/message``,
        written when the step records its first tool result or ends. ``model``
        is ``(provider, model)``; ``max_tokens`` says the call stopped on the token
        limit (the turn then ends ``max-tokens`` unless it ends worse).
        """
        self._unsealed("its output")
        if reasoning is not None:
            self._blocks.append({"type": "reasoning", "text": reasoning})
        if text is not None:
            self._blocks.append({"type": "text", "text": text})
        self._blocks.extend(content)
        if usage is not None:
            self._usage = dict(usage)
        if model is not None:
            self._provenance = {"provider": model[0], "model": model[1]}
        if max_tokens:
            self.turn._max_tokens = True

    def tool_call(
        self, name: str, arguments: object = "{}", *, call_id: str | None = None
    ) -> ToolCall:
        """Add a tool call to the step's output; returns it for the result.

        ``arguments`` is the model's JSON text, or a JSON value written as such
        text. ``call_id`` defaults to a fresh unique id.
        """
        self._unsealed("a tool call")
        if call_id is None:
            call_id = f"call_{_fresh_id()}"
        if call_id in self._call_ids:
            msg = f"tool call id {json.dumps(call_id)} is already used in this step"
            raise SessionError(msg)
        call = ToolCall(call_id, name, arguments_text(arguments))
        self._call_ids.add(call_id)
        self._blocks.append(
            {
                "type": "tool-call",
                "id": call.id,
                "name": name,
                "arguments": call.arguments,
            }
        )
        return call

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The step's tool calls (reading them writes the assistant message)."""
        self._live()
        self._seal()
        return [call for call, _ in self._calls.values()]

    def tool_result(
        self,
        call: ToolCall | str,
        content: Content,
        *,
        is_error: bool = False,
        error: Mapping[str, Any] | None = None,
        meta: Any = None,
    ) -> int:
        """Record a tool's result for one of this step's calls; returns its seq.

        The result joins the history and cites its call. Each call takes at most
        one result; a call may go unanswered.
        """
        self._live()
        self._seal()
        call_id = call.id if isinstance(call, ToolCall) else call
        known = self._calls.get(call_id)
        if known is None or call_id in self._answered:
            msg = (
                f"tool/result for {json.dumps(call_id)} with no prior tool/call "
                "in this step"
            )
            raise InvariantError(msg)
        data: dict[str, Any] = {
            **self._where(),
            "callId": call_id,
            "content": content_blocks(content),
            "isError": is_error,
        }
        if error is not None:
            data["error"] = dict(error)
        if meta is not None:
            data["meta"] = meta
        seq = self._append("tool/result", data, "append", [known[1]])
        self._answered.add(call_id)
        return seq

    def event(self, event_type: str, data: Any) -> int:
        """Record a log-only event inside the step (a hook, a plugin's own type)."""
        self._live()
        self.turn._check_event_type(event_type)
        return self._append(event_type, _checked(event_type, data))

    def _seal(self) -> None:
        """Write the assistant message and its tool calls (once)."""
        if self._sealed:
            return
        blocks = self._blocks or assemble_chunks(self._chunks)
        if blocks or self._usage is not None or self._chunk_seqs:
            message: dict[str, Any] = {**self._where(), "content": blocks}
            if self._usage is not None:
                message["usage"] = self._usage
            if self._provenance is not None:
                message["provenance"] = self._provenance
            self.message_seq = self._append(
                "assistant/message", message, "append", self._chunk_seqs or None
            )
        self._sealed = True
        for block in blocks:
            if not (isinstance(block, dict) and block.get("type") == "tool-call"):
                continue
            call = ToolCall(
                str(block.get("id")), str(block.get("name")), str(block["arguments"])
            )
            data = {
                **self._where(),
                "callId": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
            self._calls[call.id] = (call, self._append("tool/call", data))


def exit_args(
    error: BaseException | None,
) -> tuple[type[BaseException] | None, BaseException | None, TracebackType | None]:
    if error is None:
        return None, None, None
    return type(error), error, error.__traceback__


def _fresh_id() -> str:
    import uuid

    return uuid.uuid4().hex[:24]


class Step(StepBase):
    """A step of a :class:`Turn`: ``with turn.step() as step:``."""

    turn: Turn

    def __enter__(self) -> Step:
        self._unit = self.turn._unit()
        handle = self._unit.__enter__()
        try:
            self.turn._opening(self)
            self._begin(handle)
        except BaseException as error:
            self._leave(failed=True)
            self._unit.__exit__(type(error), error, error.__traceback__)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        failed = True
        try:
            if error is not None:
                self._unit.__exit__(kind, error, traceback)
                return
            try:
                self._finish()
            except BaseException as failure:
                self._unit.__exit__(type(failure), failure, failure.__traceback__)
                raise
            self._unit.__exit__(None, None, None)
            failed = False
        finally:
            self._leave(failed=failed)


# ------------------------------------------------------------------- turns


@contextlib.contextmanager
def _on_handle(handle: SessionHandle) -> Iterator[SessionHandle]:
    """A unit on a ``get_session`` handle: no lock, no flush (the loop flushes),
    but a block that raises still drops what it appended."""
    mark = len(handle.aggregate.pending_events)
    try:
        yield handle
    except BaseException:
        handle.app.roll_back(handle, mark)
        raise


class TurnBase:
    """A turn's state and its writing methods, shared by both APIs."""

    def __init__(
        self,
        session_id: str,
        *,
        user: Content | None,
        source: Mapping[str, Any] | None,
        trigger: Mapping[str, Any] | None,
        unit: Unit,
        strict: bool,
        create: bool,
        cwd: str | None,
        owner: str | None,
    ) -> None:
        if unit not in ("step", "turn"):
            msg = f'a turn\'s unit of work is "step" or "turn", got {unit!r}'
            raise SessionError(msg)
        self.session_id = session_id
        self.unit: Unit = unit
        self.strict = strict
        self.number = 0
        """The turn's number (set when it opens)."""
        self._source = dict(source) if source is not None else dict(USER)
        self._user = None if user is None else content_blocks(user)
        self._trigger = dict(trigger) if trigger is not None else None
        self._create = create
        self._cwd = cwd
        self._owner = owner
        self._pending: list[Pending] = []
        self._reason: dict[str, Any] | None = None
        self._max_tokens = False
        self._last_step = 0
        self._state = "new"
        self._held: SessionHandle | None = None
        """The handle of the turn's own unit (``unit="turn"``) while it is open."""
        self._step: StepBase | None = None
        self.user_seq: int | None = None
        """The seq of the user message that opened the turn, once written."""
        self.end_seq: int | None = None
        """The seq of the turn's ``turn/end``, once written."""

    def _start(self, handle: SessionHandle, *, join: bool = False) -> None:
        turns = handle.aggregate.turns
        if join and turns.open_turn is not None and turns.open_step is None:
            # Join the session's open turn (a loop that writes one turn across
            # several calls, such as a framework's session store).
            self.number = int(turns.open_turn)
            self._last_step = turns.next_step - 1
            if self._user is not None:
                message = {"content": self._user, "source": self._source}
                envelope = handle.append("user/message", message, surface_op="append")
                self.user_seq = int(envelope["seq"])
            return
        number = turns.next_turn
        if turns.open_turn is not None:
            msg = f"turn/start while turn {json.dumps(turns.open_turn)} is still open"
            raise InvariantError(msg)
        data: dict[str, Any] = {"turn": number}
        trigger = self._trigger
        if trigger is None and self._user is not None:
            trigger = {"kind": "message", "source": self._source}
        if trigger is not None:
            data["trigger"] = trigger
        handle.append("turn/start", data)
        self.number = number
        if self._user is not None:
            message = {"content": self._user, "source": self._source}
            envelope = handle.append("user/message", message, surface_op="append")
            self.user_seq = int(envelope["seq"])

    def _end(self, handle: SessionHandle, error: BaseException | None) -> None:
        self._write_pending(handle)
        reason = self._ending(error)
        envelope = handle.append("turn/end", {"turn": self.number, "reason": reason})
        self.end_seq = int(envelope["seq"])

    def _ending(self, error: BaseException | None) -> dict[str, Any]:
        """The turn/end reason (docs/invariants.md#turn-end-reasons)."""
        if isinstance(error, _ABORTS):
            return {"kind": "aborted", "reason": type(error).__name__}
        if error is not None:
            reason: dict[str, Any] = {"kind": "error", "step": self._last_step}
            reason["message"] = str(error) or type(error).__name__
            reason["code"] = type(error).__name__
            return reason
        reason = self._reason or {"kind": "completed"}
        if self._max_tokens and reason.get("kind") == "completed":
            return {"kind": "max-tokens"}
        return reason

    def _opening(self, step: StepBase) -> None:
        self._require_open()
        if self._step is not None:
            msg = f"step {self._step.number} of turn {self.number} is still open"
            raise SessionError(msg)
        self._step = step

    def _require_open(self) -> None:
        if self._state != "open":
            where = f"turn {self.number}" if self.number else "the turn"
            state = "not open yet" if self._state == "new" else "over"
            msg = f"{where} of session {json.dumps(self.session_id)} is {state}"
            raise SessionError(msg)

    def _write_pending(self, handle: SessionHandle) -> list[Pending]:
        """Write what waited for a unit; returns it (to requeue if the unit fails)."""
        pending, self._pending = self._pending, []
        for event_type, data, surface_op in pending:
            handle.append(event_type, data, surface_op=surface_op)
        return pending

    def _add(self, event_type: str, data: Any, surface_op: Any = None) -> int | None:
        """Write now if a unit is open, else with the next unit (returns ``None``)."""
        self._require_open()
        checked = _checked(event_type, data)
        live = self._step._handle if self._step is not None else self._held
        if live is None:
            self._pending.append((event_type, checked, surface_op))
            return None
        return int(live.append(event_type, checked, surface_op=surface_op)["seq"])

    def _reopened(self) -> str:
        where = json.dumps(self.session_id)
        return f"turn {self.number} of session {where} was already opened"

    def _check_event_type(self, event_type: str) -> None:
        if event_type in WRITER_TYPES:
            msg = (
                f'"{event_type}" is written by the turn writer itself; use its '
                "own method"
            )
            raise SessionError(msg)
        if self.strict:
            check_strict_type(event_type)

    # The turn's own writing methods (no I/O).

    def user(
        self, content: Content, *, source: Mapping[str, Any] | None = None
    ) -> int | None:
        """Add another user message to the turn (written now inside a unit, else
        with the next one; returns its seq when written now)."""
        source = dict(source) if source is not None else dict(USER)
        return self._add(
            "user/message",
            {"content": content_blocks(content), "source": source},
            "append",
        )

    def context(self, content: Content, *, plugin: str) -> int | None:
        """Add context a plugin injects (the model sees it in a ``<context>`` frame)."""
        source = {"kind": "plugin", "plugin": plugin}
        data = {"content": content_blocks(content), "source": source}
        return self._add("context/message", data, "append")

    def steer(
        self, content: Content, *, source: Mapping[str, Any] | None = None
    ) -> int | None:
        """Add a steering message between steps (a ``<steering>`` frame)."""
        data = {
            "turn": self.number,
            "content": content_blocks(content),
            "source": dict(source) if source is not None else dict(USER),
        }
        return self._add("steering/message", data, "append")

    def event(self, event_type: str, data: Any) -> int | None:
        """Add a log-only event (``todo/write``, a hook, a plugin's own type).

        With ``strict`` (the default) an undeclared type in a core family
        (``tool/…``, ``user/…``, …) is refused: it would be a silent plugin event.
        """
        self._check_event_type(event_type)
        return self._add(event_type, data)

    def end(self, reason: Reason = "completed") -> None:
        """Say how the turn ends; ``turn/end`` is written when the block exits.

        ``max-tokens`` recorded by a step wins over ``completed``.
        """
        self._require_open()
        if self._step is not None:
            msg = f"step {self._step.number} of turn {self.number} is still open"
            raise SessionError(msg)
        self._reason = _reason(reason)
        self._state = "ending"


class Turn(TurnBase):
    """An open turn of one session, for a synchronous loop (docs/agents.md).

    ``with app.turn(session_id, user="hi") as turn:`` writes ``turn/start`` and the
    user message; ``with turn.step() as step:`` opens a step; leaving the turn's
    block writes ``turn/end`` (``completed``, or ``error``/``aborted`` when the
    block raised).
    """

    _outer: AbstractContextManager[SessionHandle]

    def __init__(
        self,
        app: Sessions,
        session_id: str,
        *,
        handle: SessionHandle | None = None,
        **options: Any,
    ) -> None:
        super().__init__(session_id, **options)
        self.app = app
        self.handle = handle
        """A ``get_session`` handle to write on directly (no command; the loop
        flushes), or ``None``: each unit is a :meth:`Sessions.command`."""

    def _unit(self, *, create: bool = False) -> AbstractContextManager[SessionHandle]:
        if self.handle is not None:
            return _on_handle(self.handle)
        if create:
            return self.app.command(
                self.session_id, create=True, cwd=self._cwd, owner=self._owner
            )
        return self.app.command(self.session_id)

    def step(self) -> Step:
        """A new step: use it as ``with turn.step() as step:``."""
        return Step(self)

    def open(self, *, join: bool = False) -> Turn:
        """Write the turn's start (what entering its ``with`` block does).

        ``join`` continues the session's open turn instead, if it has one.
        """
        if self._state != "new":
            raise SessionError(self._reopened())
        unit = self._unit(create=self._create)
        handle = unit.__enter__()
        try:
            self._start(handle, join=join)
        except BaseException as error:
            unit.__exit__(type(error), error, error.__traceback__)
            raise
        if self.unit == "turn":
            self._outer, self._held = unit, handle
        else:
            unit.__exit__(None, None, None)
        self._state = "open"
        return self

    def close(self, error: BaseException | None = None) -> None:
        """Write the turn's end (what leaving its ``with`` block does)."""
        if self._state not in ("open", "ending"):
            return
        self._state = "closed"
        if self.unit == "turn":
            outer, handle, self._held = self._outer, self._held, None
            if error is not None or handle is None:
                outer.__exit__(*exit_args(error))
                return
            try:
                self._end(handle, None)
            except BaseException as failure:
                outer.__exit__(type(failure), failure, failure.__traceback__)
                raise
            outer.__exit__(None, None, None)
            return
        try:
            with self._unit() as handle:
                self._end(handle, error)
        except AgentlogError:
            if error is None:
                raise
            logger.warning(
                "turn %s of session %r: its end could not be written",
                self.number,
                self.session_id,
                exc_info=True,
            )

    def __enter__(self) -> Turn:
        return self.open()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(error)
