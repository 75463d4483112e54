"""The original harness's later log format ("harness-head"), read into our vocabulary.

Its logs differ from the seed era we implement: rows may lack ``seq``/``time``, runs of
stream deltas are packed into ``text-chunks`` / ``reasoning-chunks`` /
``tool-call-chunks`` rows, messages are wrapped with ids and roles, compaction is
``compaction/*``, and several reasons and triggers changed shape. This module expands
and maps what has an exact counterpart, keeps everything else verbatim as log-only
events, and reports every place where the result is not an exact translation.

Decisions (documented in the report of each import):

* ``seq``: a row without one takes its position after expansion (the harness numbers
  events that way: a packed row's members are ``seq0 .. seq0+n-1``). References
  (``sourceEventSeqs``, ``surfaceOp``, ``messageSeqs``, ``shadowedSeqs``) are already in
  that numbering, so they are kept and only *checked* (:mod:`harness_checks`).
* ``time``: a row without one takes the previous event's time (0 before the first
  known time); a packed row's members follow from there by the recorded gaps ``dt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from domain.json import Envelope, dumps
from infrastructure.harness_checks import Report, check_blocks, check_references
from infrastructure.logscan import (
    DecodedLog,
    MalformedRowError,
    parse_header,
    read_log_text,
    scan_events,
)
from infrastructure.placeholders import (
    apply_substitutions,
    check_substitutions,
    find_placeholders,
)

__all__ = ["CHUNK_ROW_TYPES", "decode_harness_log", "looks_like_harness_row"]

CHUNK_ROW_TYPES: Final = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_DELTA_TYPES: Final = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
_TEXT_ROW_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_ROW_KEYS: Final = frozenset({"turn", "step", "index", "dt", "id", "args"})
_ROW_ENVELOPE_KEYS: Final = frozenset({"type", "seq0", "time0", "data"})
_ENVELOPE_KEYS: Final = ("type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp")
_HEADER_KEYS: Final = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "delegationDepth",
)
_SEED_ERA_TYPES: Final = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "prompt/blocked",
        "context/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "steering/message",
        "todo/write",
        "compact/start",
        "compact/summary",
        "compact/end",
        "hook/invoked",
        "hook/result",
        "session/title",
        "session/title-llm-request",
        "request/header",
    }
)
_SURFACE_TYPES: Final = frozenset(
    {
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    }
)
_REQUEST_HEADER_REASONS: Final = frozenset({"initial", "resume", "change", "fallback"})


def looks_like_harness_row(value: object) -> bool:
    """Whether one parsed line has a shape only the harness's later writer produces."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if kind in CHUNK_ROW_TYPES or "seq" not in value or "time" not in value:
        return True
    if set(value) - set(_ENVELOPE_KEYS):
        return True
    data = value.get("data")
    surface_op = value.get("surfaceOp")
    return (
        (kind == "turn/start" and isinstance(data, dict) and "trigger" not in data)
        or (isinstance(data, dict) and isinstance(data.get("message"), dict))
        or (kind == "user/message" and isinstance(data, dict) and "role" in data)
        or (isinstance(surface_op, dict) and "startSeq" in surface_op)
        or (isinstance(kind, str) and kind.startswith("compaction/"))
    )


def decode_harness_log(
    data: bytes, *, source: str, substitutions: Mapping[str, str] | None = None
) -> DecodedLog:
    """Read a harness-head log (plain or Zstandard) and map it onto our vocabulary.

    The read rules are our format's (torn final line ignored, torn tail after the last
    ``turn/end`` dropped, defects before it refused), except that ``delegationDepth``
    may be absent. ``substitutions`` fills ``{{name}}`` placeholders (``cwd`` must be
    absolute). The report names every row that is not an exact translation.
    """
    checked = check_substitutions(substitutions)
    text = read_log_text(data, session_id=source)
    raw_header = parse_header(text.lines[0], session_id=source, require_depth=False)
    raw_header = apply_substitutions(raw_header, checked)
    expander = _RowExpander(checked)
    events, tail = scan_events(
        text.lines[1:],
        session_id=str(raw_header["id"]),
        decode_row=expander,
        strict_lines=text.strict_lines,
    )
    report = Report()
    header = _map_header(raw_header, report)
    mapped = _EventMapper(events, report).run()
    check_blocks(mapped, expander.packed, report)
    check_references(mapped, report)
    _report_envelopes(expander, len(mapped), report)
    for placeholder, count in find_placeholders([header, mapped]).items():
        report.note(
            f"placeholder {placeholder} has no substitution; kept literally"
            f" ({count} occurrence(s))"
        )
    return DecodedLog(header, mapped, [*text.report, *tail, *report.lines()])


def _report_envelopes(expander: _RowExpander, total: int, report: Report) -> None:
    if expander.missing_seq:
        report.note(
            f"{expander.missing_seq} of {total} events had no seq; each took its"
            " position after packed chunk rows were expanded"
        )
    if expander.missing_time:
        report.note(
            f"{expander.missing_time} of {total} events had no time; each took the"
            " previous event's time (0 before the first known time), packed chunks"
            " adding their recorded gaps (dt)"
        )


def _map_header(raw: dict[str, Any], report: Report) -> dict[str, Any]:
    header = {key: raw[key] for key in _HEADER_KEYS if key in raw}
    for key, value in raw.items():
        if key not in header:
            report.note(
                f'header key "{key}" ({_show(value)}) has no place in our header;'
                " dropped"
            )
    return header


def _show(value: object) -> str:
    text = dumps(value).decode().strip()
    return text if len(text) <= 80 else text[:77] + "..."  # noqa: PLR2004


def _is_int(value: object) -> bool:
    return type(value) is int


class _RowExpander:
    """Turns one parsed row into events: seq/time filled in, chunk rows expanded."""

    def __init__(self, substitutions: Mapping[str, str]) -> None:
        self.substitutions = substitutions
        self.last_time = 0
        self.missing_seq = 0
        self.missing_time = 0
        self.packed: list[tuple[int, int, str]] = []  # (first seq, members, row type)

    def __call__(self, value: Any, expected: int) -> list[Any]:
        value = apply_substitutions(value, self.substitutions)
        if not isinstance(value, dict):
            return [value]
        if value.get("type") in CHUNK_ROW_TYPES:
            return self._expand(value, expected)
        return [self._event(value, expected)]

    def _event(self, row: dict[str, Any], expected: int) -> Envelope:
        event: Envelope = {}
        if "type" in row:
            event["type"] = row["type"]
        if "seq" in row:
            event["seq"] = row["seq"]
        else:
            event["seq"] = expected
            self.missing_seq += 1
        if "time" in row:
            event["time"] = row["time"]
            if _is_int(row["time"]):
                self.last_time = row["time"]
        else:
            event["time"] = self.last_time
            self.missing_time += 1
        event.update(row)
        return event

    def _expand(self, row: dict[str, Any], expected: int) -> list[Any]:
        tag = str(row["type"])
        data, members = _check_row(tag, row)
        seq = row.get("seq0", expected)
        time = row.get("time0", self.last_time)
        if "seq0" not in row:
            self.missing_seq += len(members)
        if "time0" not in row:
            self.missing_time += len(members)
        events: list[Any] = []
        for offset, member in enumerate(members):
            if offset:
                time += data["dt"][offset - 1]
            chunk: dict[str, Any] = {"type": _DELTA_TYPES[tag], "index": data["index"]}
            if tag == "tool-call-chunks":
                chunk["id"] = data["id"]
                if "name" in data:
                    chunk["name"] = data["name"]
                chunk["argumentsDelta"] = member
            else:
                chunk["text"] = member
            events.append(
                {
                    "type": "assistant/chunk",
                    "seq": seq + offset,
                    "time": time,
                    "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk},
                }
            )
        self.last_time = time
        self.packed.append((seq, len(members), tag))
        return events


def _check_row(tag: str, row: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Validate a packed row before expanding it; a bad one is a defect, not a guess."""

    def malformed(why: str) -> MalformedRowError:
        return MalformedRowError(f"malformed {tag} storage row: {why}")

    if set(row) - _ROW_ENVELOPE_KEYS:
        msg = "envelope must be {type, seq0?, time0?, data}"
        raise malformed(msg)
    for key in ("seq0", "time0"):
        if key in row and not (_is_int(row[key]) and (key == "time0" or row[key] >= 0)):
            raise malformed(f"{key} must be a safe integer")
    data = row.get("data")
    if not isinstance(data, dict):
        raise malformed("data must be an object")
    if tag == "tool-call-chunks":
        payload_key = "args"
        if set(data) not in (_TOOL_ROW_KEYS, _TOOL_ROW_KEYS | {"name"}):
            raise malformed("data must be exactly {turn, step, index, id, name?, dt, args}")
        if not isinstance(data["id"], str) or not isinstance(data.get("name", ""), str):
            raise malformed("id (and name when present) must be strings")
    else:
        payload_key = "texts"
        if set(data) != _TEXT_ROW_KEYS:
            raise malformed("data must be exactly {turn, step, index, dt, texts}")
    if not all(_is_int(data[key]) for key in ("turn", "step", "index")):
        raise malformed("turn/step/index must be integers")
    members = data[payload_key]
    if (
        not isinstance(members, list)
        or not members
        or not all(isinstance(member, str) for member in members)
    ):
        raise malformed(f"{payload_key} must be a non-empty string array")
    gaps = data["dt"]
    if not isinstance(gaps, list) or not all(_is_int(gap) for gap in gaps):
        raise malformed("dt must be an array of integers")
    if len(gaps) != len(members) - 1:
        raise malformed(f"dt length {len(gaps)} does not match {len(members)} members")
    return data, members


class _EventMapper:
    """Maps expanded harness events onto our vocabulary, one event at a time."""

    def __init__(self, events: list[Any], report: Report) -> None:
        self.events = events
        self.report = report
        self.claimed = _claimed_inbox_items(events)
        self.last_step: dict[Any, Any] = {}
        self.unknown: dict[str, int] = {}

    def run(self) -> list[Envelope]:
        mapped = [
            self._map(index, event) if isinstance(event, dict) else event
            for index, event in enumerate(self.events)
        ]
        if self.unknown:
            kinds = ", ".join(f"{kind} x{count}" for kind, count in self.unknown.items())
            self.report.note(
                "kept events of types our vocabulary does not define, verbatim as"
                f" log-only plugin events: {kinds}"
            )
        return mapped

    def _map(self, index: int, event: Envelope) -> Envelope:
        out = self._envelope(event)
        kind = out.get("type")
        data = out.get("data")
        if not isinstance(data, dict):
            return out
        seq = out.get("seq")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, index, seq, out, data)
        elif kind not in _SEED_ERA_TYPES:
            self.unknown[str(kind)] = self.unknown.get(str(kind), 0) + 1
            for marker in ("surfaceOp", "sourceEventSeqs"):
                if marker in out and kind not in _SURFACE_TYPES:
                    del out[marker]
                    self.report.note(f"{kind}: dropped {marker} (not a surface type)", seq)
        return out

    def _envelope(self, event: Envelope) -> Envelope:
        out = {key: event[key] for key in _ENVELOPE_KEYS[:4] if key in event}
        for key, value in event.items():
            if key in out:
                continue
            if key == "surfaceOp":
                out[key] = _surface_op(value)
            elif key == "sourceEventSeqs":
                out[key] = value
            else:
                self.report.note(
                    f'dropped envelope key "{key}" ({_show(value)})', event.get("seq")
                )
        return out

    # -- per type ------------------------------------------------------------------

    def _turn_start(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
        if "trigger" in data:
            return
        trigger, origin = self._derive_trigger(index)
        out["data"] = {**data, "trigger": trigger}
        self.report.note(
            f"turn/start had no trigger; set {_show(trigger)} from {origin}", seq
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

    def _step_start(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
        if _is_int(data.get("turn")) and _is_int(data.get("step")):
            self.last_step[data["turn"]] = data["step"]

    def _turn_end(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
        reason = data.get("reason")
        if not isinstance(reason, dict):
            return
        kind = reason.get("kind")
        rest = {key: value for key, value in reason.items() if key not in ("kind", "reason", "error")}
        if kind == "aborted" and isinstance(reason.get("reason"), dict):
            new = self._aborted(seq, reason["reason"])
        elif kind == "error" and isinstance(reason.get("error"), dict):
            step = self.last_step.get(data.get("turn"))
            if step is None:
                step = 0
                self.report.note("turn/end error: the turn has no step/start; step set to 0", seq)
            else:
                self.report.note(
                    f"turn/end error: step {step} taken from the turn's last step/start", seq
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
        self.report.note(f"turn/end aborted: dropped the cause {_show(cause)}", seq)
        return {"kind": "aborted"}

    def _user_message(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
        if "role" not in data:
            return
        if data["role"] == "user":
            out["data"] = {key: value for key, value in data.items() if key != "role"}
        else:
            self.report.note(f"user/message with role {_show(data['role'])}; kept verbatim", seq)

    def _assistant_message(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            return
        new = {key: data[key] for key in ("turn", "step") if key in data}
        new["content"] = message.get("content")
        source = message.get("source")
        if isinstance(source, dict) and source.get("kind") == "model":
            new["provenance"] = {k: v for k, v in source.items() if k != "kind"}
        elif source is not None:
            new["source"] = source
            self.report.note(
                f"assistant/message source {_show(source)} is not a model source; kept"
                " as data.source",
                seq,
            )
        if "usage" in data:
            new["usage"] = data["usage"]
        self._rest(new, data, ("turn", "step", "message", "usage"), seq)
        self._message_rest(new, message, "assistant", seq)
        out["data"] = new

    def _tool_result(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
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
                    f"tool/result: the block's toolCallId {_show(block_call)} differs"
                    f" from the source callId {_show(call_id)}; kept the source's",
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
        new = {key: data[key] for key in ("turn", "step") if key in data}
        new.update({"callId": call_id, "content": content, "isError": is_error})
        self._rest(new, data, ("turn", "step", "message"), seq)
        self._message_rest(new, message, "user", seq, skip=("source",))
        out["data"] = new

    def _system_message(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        message = data.get("message")
        if not isinstance(message, dict):
            self.unknown["system/message"] = self.unknown.get("system/message", 0) + 1
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

    def _compaction(self, index: int, seq: Any, out: Envelope, data: dict[str, Any]) -> None:
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
        self.unknown[kind] = self.unknown.get(kind, 0) + 1
        self.report.note(f"{kind} does not match compact/{name}; kept verbatim", seq)

    def _request_header(
        self, index: int, seq: Any, out: Envelope, data: dict[str, Any]
    ) -> None:
        reason = data.get("reason")
        if reason not in _REQUEST_HEADER_REASONS:
            self.report.note(
                f"request/header reason {_show(reason)} is not in our vocabulary; kept"
                " verbatim (the import may refuse it)",
                seq,
            )

    # -- helpers -------------------------------------------------------------------

    def _rest(
        self, new: dict[str, Any], data: dict[str, Any], taken: tuple[str, ...], seq: Any
    ) -> None:
        """Copy the payload's other keys after the mapped ones."""
        for key, value in data.items():
            if key not in taken and key not in new:
                new[key] = value
            elif key not in taken:
                self.report.note(f'dropped data key "{key}" (clashes with a mapped key)', seq)

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
                f"message role {_show(message.get('role'))} where {role} was expected;"
                " dropped",
                seq,
            )
        taken = ("role", "content", "source", *skip)
        for key, value in message.items():
            if key in taken:
                continue
            if key in new:
                self.report.note(f'dropped message key "{key}" (clashes with data)', seq)
            else:
                new[key] = value


_HANDLERS: Final = {
    "turn/start": _EventMapper._turn_start,
    "step/start": _EventMapper._step_start,
    "turn/end": _EventMapper._turn_end,
    "user/message": _EventMapper._user_message,
    "assistant/message": _EventMapper._assistant_message,
    "tool/result": _EventMapper._tool_result,
    "system/message": _EventMapper._system_message,
    "assistant/chunk": _EventMapper._assistant_chunk,
    "compaction/start": _EventMapper._compaction,
    "compaction/summary": _EventMapper._compaction,
    "compaction/end": _EventMapper._compaction,
    "request/header": _EventMapper._request_header,
}


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
        if items and data.get("outcome") != "canceled" and data.get("target") == "next-turn":
            claimed[event.get("seq")] = items
    return claimed
