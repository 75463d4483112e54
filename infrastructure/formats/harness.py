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

import io
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from agentlog.domain.header import HEADER_KEYS, SESSION_FORMAT_VERSION
from agentlog.infrastructure.formats.harness_checks import (
    Report,
    check_blocks,
    check_references,
    show,
)
from agentlog.infrastructure.formats.harness_mapping import EventMapper
from agentlog.infrastructure.formats.harness_rules import (
    refuse_what_the_original_refuses,
)
from agentlog.infrastructure.formats.logscan import (
    DecodedLog,
    LogLines,
    MalformedRowError,
    parse_header,
    scan_events,
)
from agentlog.infrastructure.formats.placeholders import (
    apply_substitutions,
    check_substitutions,
    find_placeholders,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlog.domain.json import Envelope

__all__ = ["CHUNK_ROW_TYPES", "decode_harness_log", "looks_like_harness_row"]

CHUNK_ROW_TYPES: Final = frozenset(
    {"text-chunks", "reasoning-chunks", "tool-call-chunks"}
)
_DELTA_TYPES: Final = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
_TEXT_ROW_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_ROW_KEYS: Final = frozenset({"turn", "step", "index", "dt", "id", "args"})
_ROW_ENVELOPE_KEYS: Final = frozenset({"type", "seq0", "time0", "data"})
_ENVELOPE_KEYS: Final = ("type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp")
_WRAPPED_TYPES: Final = frozenset(
    {"user/message", "assistant/message", "tool/result", "system/message"}
)


def looks_like_harness_row(value: object) -> bool:
    """Whether one parsed line has a shape only the harness's later writer produces.

    Only shapes our format never holds count: packed rows, rows with neither
    ``seq`` nor ``time`` (one missing alone is a defect of our format, refused),
    envelope keys we do not write, ``turn/start`` without a trigger, a message
    wrapper instead of ``content``, the later replace marker. (Types only the later
    writer uses do not count: an import keeps them as plugin events, so our own
    exports hold them too.)
    """
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if not isinstance(kind, str):
        return False
    if kind in CHUNK_ROW_TYPES:
        return True
    if "seq" not in value and "time" not in value:
        return True
    if set(value) - set(_ENVELOPE_KEYS):
        return True
    data = value.get("data")
    surface_op = value.get("surfaceOp")
    if isinstance(surface_op, dict) and "startSeq" in surface_op:
        return True
    if not isinstance(data, dict):
        return False
    wrapped = isinstance(data.get("message"), dict) and "content" not in data
    return (kind == "turn/start" and "trigger" not in data) or (
        kind in _WRAPPED_TYPES and wrapped
    )


def decode_harness_log(
    data: bytes | BinaryIO,
    *,
    source: str,
    substitutions: Mapping[str, str] | None = None,
) -> DecodedLog:
    """Read a harness-head log (plain or Zstandard) and map it onto our vocabulary.

    The read rules are our format's (torn final line ignored, torn tail after the last
    ``turn/end`` dropped, defects before it refused), except that ``version`` and
    ``delegationDepth`` may be absent (a missing version is taken as 0, and said so).
    ``substitutions`` fills ``{{name}}`` placeholders (``cwd`` must be absolute).
    The report names every row that is not an exact translation; the decoded log
    gives each event's file line.
    """
    checked = check_substitutions(substitutions)
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    log = LogLines(stream, source=source)
    lines = iter(log)
    first = next(lines)
    raw_header = parse_header(first.text, source=source, require_version=False)
    raw_header = apply_substitutions(raw_header, checked)
    expander = _RowExpander(checked)
    tail: list[str] = []
    numbered = list(
        scan_events(
            lines,
            log=log,
            session_id=str(raw_header["id"]),
            decode_row=expander,
            report=tail,
        )
    )
    events = [event for _, event in numbered]
    refuse_what_the_original_refuses(events, [line.number for line, _ in numbered])
    report = Report()
    header = _map_header(raw_header, report)
    mapped = EventMapper(events, report).run()
    check_blocks(mapped, expander.packed, report)
    check_references(mapped, report)
    _report_envelopes(expander, len(mapped), report)
    for placeholder, count in find_placeholders([header, mapped]).items():
        report.note(
            f"placeholder {placeholder} has no substitution; kept literally"
            f" ({count} occurrence(s))"
        )
    return DecodedLog(
        header,
        mapped,
        [*log.report, *tail, *report.lines()],
        [line.number for line, _ in numbered],
    )


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
    header: dict[str, Any] = {key: raw[key] for key in HEADER_KEYS if key in raw}
    if "version" not in header:
        header = {"version": SESSION_FORMAT_VERSION, **header}
        report.note("the header has no version; stored as version 0")
    for key, value in raw.items():
        if key not in header:
            report.note(
                f'header key "{key}" ({show(value)}) has no place in our header;'
                " dropped"
            )
    return header


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
        if not isinstance(value.get("type"), str) or not value["type"]:
            msg = "a row's type must be a non-empty string"
            raise MalformedRowError(msg)
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
                    "data": {
                        "turn": data["turn"],
                        "step": data["step"],
                        "chunk": chunk,
                    },
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
            raise malformed(
                "data must be exactly {turn, step, index, id, name?, dt, args}"
            )
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
