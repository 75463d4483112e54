"""Harness-head events, mapped one by one onto the seed-era vocabulary we implement.

The harness's later writer wraps messages (``data.message`` with ``id``/``role``),
drops the ``turn/start`` trigger, nests failures (``LlmFailure``) and renames
compaction. Where the seed era has the same meaning the event is rewritten; where it
does not, the event is kept verbatim as a log-only plugin event. Every rewrite that
loses or infers something is written to the report, never done silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agentlog.domain.vocabulary import CORE_TYPES, PLUGIN_TYPES
from agentlog.infrastructure.formats.harness_checks import show

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope
    from agentlog.infrastructure.formats.harness_checks import Report

__all__ = ["EventMapper"]

_ENVELOPE_KEYS: Final = ("type", "seq", "time", "data")

_SEED_ERA_TYPES: Final = CORE_TYPES | PLUGIN_TYPES
_REQUEST_HEADER_REASONS: Final = frozenset({"initial", "resume", "change", "fallback"})


def _is_int(value: object) -> bool:
    return type(value) is int


class EventMapper:
    """Maps expanded harness events onto our vocabulary, one event at a time."""

    def __init__(self, events: list[Any], report: Report) -> None:
        self.events = events
        self.report = report
        self.claimed = _claimed_inbox_items(events)
        self.last_step: dict[Any, Any] = {}
        self.unknown: dict[str, int] = {}

    def run(self) -> list[Envelope]:
        """The mapped events, one per input event, same seqs."""
        mapped = [
            self._map(index, event) if isinstance(event, dict) else event
            for index, event in enumerate(self.events)
        ]
        self._note_outside_turns(mapped)
        if self.unknown:
            kinds = ", ".join(
                f"{kind} x{count}" for kind, count in self.unknown.items()
            )
            self.report.note(
                "kept events of types our vocabulary does not define, verbatim as"
                f" log-only plugin events: {kinds}"
            )
        return mapped

    def _note_outside_turns(self, events: list[Envelope]) -> None:
        """The harness logs inbox splices and markers between turns; we do not."""
        open_turn = False
        for event in events:
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "turn/start":
                open_turn = True
            elif kind == "turn/end":
                open_turn = False
            elif not open_turn:
                self.report.note(
                    f"{kind} sits outside any turn (a strict import refuses this)",
                    event.get("seq") if isinstance(event, dict) else None,
                )

    def _map(self, index: int, event: Envelope) -> Envelope:
        out = self._envelope(event)
        kind = out.get("type")
        data = out.get("data")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            if kind not in _SEED_ERA_TYPES:
                self._keep_unknown(out)
        elif isinstance(data, dict):
            handler(self, index, out.get("seq"), out, data)
        elif kind not in _SEED_ERA_TYPES:
            self._keep_unknown(out)
        return out

    def _keep_unknown(self, out: Envelope) -> None:
        """A type we do not define stays verbatim, log-only (no surface markers)."""
        kind = str(out.get("type"))
        self.unknown[kind] = self.unknown.get(kind, 0) + 1
        for marker in ("surfaceOp", "sourceEventSeqs"):
            if marker in out:
                del out[marker]
                self.report.note(
                    f"{kind}: dropped {marker} (not a surface type)", out.get("seq")
                )

    def _envelope(self, event: Envelope) -> Envelope:
        out: Envelope = {key: event[key] for key in _ENVELOPE_KEYS if key in event}
        for key, value in event.items():
            if key in out:
                continue
            if key == "surfaceOp":
                out[key] = _surface_op(value)
            elif key == "sourceEventSeqs":
                out[key] = value
            else:
                self.report.note(
                    f'dropped envelope key "{key}" ({show(value)})', event.get("seq")
                )
        return out

    # -- per type ------------------------------------------------------------------

    def _turn_start(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        if "trigger" in data:
            return
        trigger, origin = self._derive_trigger(index)
        out["data"] = {**data, "trigger": trigger}
        self.report.note(
            f"turn/start had no trigger; set {show(trigger)} from {origin}", seq
        )

    def _derive_trigger(self, index: int) -> tuple[dict[str, Any], str]:
        for later in self.events[index + 1 :]:
            if not isinstance(later, dict):
                continue
            kind = later.get("type")
            if kind in ("turn/start", "turn/end"):
                break
            data = later.get("data")
            if kind == "agent/inbox/spliced" and later.get("seq") in self.claimed:
                source = self.claimed[later["seq"]][0].get("source")
                if isinstance(source, dict):
                    origin = f"the queued message claimed at seq {later['seq']}"
                    return {"kind": "message", "source": source}, origin
            if kind == "user/message" and isinstance(data, dict):
                source = data.get("source")
                if isinstance(source, dict):
                    origin = f"the user/message at seq {later.get('seq')}"
                    return {"kind": "message", "source": source}, origin
        return {"kind": "unknown"}, "nothing (the turn claims no message)"

    def _step_start(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        if _is_int(data.get("turn")) and _is_int(data.get("step")):
            self.last_step[data["turn"]] = data["step"]

    def _turn_end(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        reason = data.get("reason")
        if not isinstance(reason, dict):
            return
        kind = reason.get("kind")
        rest = {
            key: value
            for key, value in reason.items()
            if key not in ("kind", "reason", "error")
        }
        if kind == "aborted" and isinstance(reason.get("reason"), dict):
            new = self._aborted(seq, reason["reason"])
        elif kind == "error" and isinstance(reason.get("error"), dict):
            step = self.last_step.get(data.get("turn"))
            if step is None:
                step = 0
                self.report.note(
                    "turn/end error: the turn has no step/start; step set to 0", seq
                )
            else:
                self.report.note(
                    f"turn/end error: step {step} is the turn's last step/start",
                    seq,
                )
            new = {"kind": "error", "step": step, **_flat_failure(reason["error"])}
        elif kind == "blocked":
            self.report.note(
                'turn/end reason "blocked" has no seed-era counterpart (rejected needs'
                " a reason text); kept verbatim",
                seq,
            )
            return
        else:
            return
        out["data"] = {**data, "reason": {**new, **rest}}

    def _aborted(self, seq: Any, cause: dict[str, Any]) -> dict[str, Any]:
        kind = cause.get("kind")
        if kind == "disposed":
            return {"kind": "disposed"}
        if kind in ("user", "legacy") and set(cause) == {"kind"}:
            return {"kind": "aborted"}
        if kind == "hook" and isinstance(cause.get("reason"), str):
            self.report.note(
                "turn/end aborted by a hook: kept the hook's reason text, dropped that"
                " a hook cancelled",
                seq,
            )
            return {"kind": "aborted", "reason": cause["reason"]}
        self.report.note(f"turn/end aborted: dropped the cause {show(cause)}", seq)
        return {"kind": "aborted"}

    def _user_message(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        if "role" not in data:
            return
        if data["role"] == "user":
            out["data"] = {key: value for key, value in data.items() if key != "role"}
        else:
            self.report.note(
                f"user/message with role {show(data['role'])}; kept verbatim", seq
            )

    def _assistant_message(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            return
        new: dict[str, Any] = {k: data[k] for k in ("turn", "step") if k in data}
        new["content"] = message.get("content")
        source = message.get("source")
        if isinstance(source, dict) and source.get("kind") == "model":
            new["provenance"] = {k: v for k, v in source.items() if k != "kind"}
        elif source is not None:
            new["source"] = source
            self.report.note(
                f"assistant/message source {show(source)} is not a model source; kept"
                " as data.source",
                seq,
            )
        if "usage" in data:
            new["usage"] = data["usage"]
        self._rest(new, data, ("turn", "step", "message", "usage"), seq)
        self._message_rest(new, message, "assistant", seq)
        out["data"] = new

    def _tool_result(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            return
        source = message.get("source")
        call_id = source.get("callId") if isinstance(source, dict) else None
        blocks = message.get("content")
        if (
            isinstance(blocks, list)
            and len(blocks) == 1
            and isinstance(blocks[0], dict)
            and blocks[0].get("type") == "tool-result"
        ):
            block = blocks[0]
            content = block.get("content")
            is_error = block.get("isError", False)
            block_call = block.get("toolCallId")
            if call_id is None:
                call_id = block_call
            elif block_call != call_id:
                self.report.note(
                    f"tool/result: the block's toolCallId {show(block_call)} differs"
                    f" from the source callId {show(call_id)}; kept the source's",
                    seq,
                )
            extra = set(block) - {"type", "toolCallId", "content", "isError"}
            if extra:
                self.report.note(
                    f"tool/result: dropped tool-result block keys {sorted(extra)}", seq
                )
        else:
            content, is_error = blocks, False
            self.report.note(
                "tool/result: the message is not exactly one tool-result block; its"
                " blocks became the content, with isError false",
                seq,
            )
        new: dict[str, Any] = {k: data[k] for k in ("turn", "step") if k in data}
        new.update({"callId": call_id, "content": content, "isError": is_error})
        self._rest(new, data, ("turn", "step", "message"), seq)
        self._message_rest(new, message, "user", seq, skip=("source",))
        out["data"] = new

    def _system_message(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            self._keep_unknown(out)
            return
        new = {"content": message.get("content"), "source": message.get("source")}
        self._message_rest(new, message, "system", seq)
        out["type"] = "context/message"
        out["data"] = new
        self.report.note(
            "system/message became context/message (derived history shows it as"
            " user-role context, our vocabulary has no system messages)",
            seq,
        )

    def _assistant_chunk(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        chunk = data.get("chunk")
        if not isinstance(chunk, dict) or chunk.get("type") != "finish":
            return
        reason = chunk.get("reason")
        if (
            isinstance(reason, dict)
            and reason.get("kind") in ("error", "aborted")
            and isinstance(reason.get("failure"), dict)
        ):
            rest = {k: v for k, v in reason.items() if k not in ("kind", "failure")}
            flat = {"kind": reason["kind"], **_flat_failure(reason["failure"]), **rest}
            out["data"] = {**data, "chunk": {**chunk, "reason": flat}}

    def _compaction(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        kind = str(out["type"])
        name = kind.removeprefix("compaction/")
        if name in ("start", "end"):
            exact = _is_int(data.get("turn")) and isinstance(data.get("error", ""), str)
        elif name == "summary":
            shadowed_range = data.get("shadowedRange")
            exact = (
                isinstance(data.get("summary"), list)
                and isinstance(shadowed_range, dict)
                and _is_int(shadowed_range.get("start"))
                and _is_int(shadowed_range.get("end"))
                and isinstance(data.get("shadowedSeqs"), list)
                and type(data.get("shadowedTokenCount")) in (int, float)
            )
        else:
            exact = False
        if exact:
            out["type"] = "compact/" + name
            return
        self._keep_unknown(out)
        self.report.note(f"{kind} does not match compact/{name}; kept verbatim", seq)

    def _request_header(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        reason = data.get("reason")
        if reason not in _REQUEST_HEADER_REASONS:
            self.report.note(
                f"request/header reason {show(reason)} is not in our vocabulary; kept"
                " verbatim (the import may refuse it)",
                seq,
            )

    # -- helpers -------------------------------------------------------------------

    def _hook_invoked(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        """The later dialect name ``claude-code`` is the seed era's ``claude``."""
        dialect = data.get("dialect")
        if dialect in _HOOK_DIALECTS:
            data["dialect"] = _HOOK_DIALECTS[dialect]
            self.report.note(
                f'hook/invoked: dialect "{dialect}" mapped to'
                f' "{_HOOK_DIALECTS[dialect]}"',
                seq,
            )

    def _rest(
        self,
        new: dict[str, Any],
        data: dict[str, Any],
        taken: tuple[str, ...],
        seq: Any,
    ) -> None:
        """Copy the payload's other keys after the mapped ones."""
        for key, value in data.items():
            if key not in taken and key not in new:
                new[key] = value
            elif key not in taken:
                self.report.note(
                    f'dropped data key "{key}" (clashes with a mapped key)', seq
                )

    def _message_rest(
        self,
        new: dict[str, Any],
        message: dict[str, Any],
        role: str,
        seq: Any,
        skip: tuple[str, ...] = (),
    ) -> None:
        """Check the wrapped message's role; keep its id (and any other key) as data."""
        if message.get("role", role) != role:
            self.report.note(
                f"message role {show(message.get('role'))} where {role} was expected;"
                " dropped",
                seq,
            )
        taken = ("role", "content", "source", *skip)
        for key, value in message.items():
            if key in taken:
                continue
            if key in new:
                self.report.note(
                    f'dropped message key "{key}" (clashes with data)', seq
                )
            else:
                new[key] = value


_HANDLERS: Final = {
    "turn/start": EventMapper._turn_start,
    "step/start": EventMapper._step_start,
    "turn/end": EventMapper._turn_end,
    "user/message": EventMapper._user_message,
    "assistant/message": EventMapper._assistant_message,
    "tool/result": EventMapper._tool_result,
    "system/message": EventMapper._system_message,
    "assistant/chunk": EventMapper._assistant_chunk,
    "compaction/start": EventMapper._compaction,
    "compaction/summary": EventMapper._compaction,
    "compaction/end": EventMapper._compaction,
    "request/header": EventMapper._request_header,
    "hook/invoked": EventMapper._hook_invoked,
}

_HOOK_DIALECTS: Final = {"claude-code": "claude"}
"""Later-era hook dialect names and their seed-era counterparts (field census)."""


def _surface_op(value: Any) -> Any:
    """The later ``{op:"replace", startSeq, endSeq}`` is our ``{op, start, end}``."""
    if isinstance(value, dict) and set(value) == {"op", "startSeq", "endSeq"}:
        return {"op": value["op"], "start": value["startSeq"], "end": value["endSeq"]}
    return value


def _flat_failure(failure: dict[str, Any]) -> dict[str, Any]:
    """An ``LlmFailure`` object as the seed era's flat ``message``/``code`` fields."""
    return {key: value for key, value in failure.items() if key != "kind"}


def _claimed_inbox_items(events: list[Any]) -> dict[Any, list[dict[str, Any]]]:
    """Replay ``agent/inbox/spliced`` rows: which queued messages each splice claimed.

    A turn claims its prompts by splicing them out of the ``next-turn`` queue right
    after ``turn/start``; the first claimed message's source is the turn's trigger.
    """
    queues: dict[Any, list[Any]] = {}
    claimed: dict[Any, list[dict[str, Any]]] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("type") != "agent/inbox/spliced":
            continue
        data = event.get("data")
        if not isinstance(data, dict):
            continue
        start = data.get("start")
        count = data.get("removedCount", 0)
        inserted = data.get("inserted", [])
        if not (_is_int(start) and _is_int(count) and isinstance(inserted, list)):
            continue
        queue = queues.setdefault(data.get("target"), [])
        removed = queue[start : start + count]
        queue[start : start + count] = inserted
        items = [item for item in removed if isinstance(item, dict)]
        if (
            items
            and data.get("outcome") != "canceled"
            and data.get("target") == "next-turn"
        ):
            claimed[event.get("seq")] = items
    return claimed
