"""The read rules every session log file shares, whoever wrote it.

Our JSONL and the original harness's later logs are both a header line plus one record
per line, plain or Zstandard-compressed, and a crash can cut either short. One reader
keeps the two importers agreeing on what is a torn tail (dropped and reported) and what
is corruption (refused, naming the line): docs/persistence.md#jsonl-format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import zstandard

from agentlog.domain.errors import CorruptSessionLogError, UnsupportedSessionFormatError
from agentlog.domain.json import Envelope, js_number, loads
from agentlog.infrastructure.formats import zstd

SESSION_FORMAT_VERSION: Final = 0
MAX_SAFE_INTEGER: Final = 2**53 - 1

EMPTY_LOG: Final = "empty or header-less session log"
EMPTY_ZSTD_LOG: Final = "empty or header-less Zstandard session log"
HEADER_NOT_JSON: Final = "corrupt session log: header line is not valid JSON"
NOT_A_HEADER: Final = "corrupt session log: first line is not a session header"
_ZSTD_CORRUPT: Final = "corrupt Zstandard session log:"
ZSTD_HEADER_FRAME: Final = (
    "corrupt Zstandard session log: first frame is not exactly one header line"
)
ZSTD_TORN_RECORD: Final = (
    "corrupt Zstandard session log: complete frame contains a torn JSONL record"
)


@dataclass(frozen=True)
class DecodedLog:
    """A decoded log: the header (without ``type``), the events, and what was off.

    ``report`` lists, in plain words, everything the reader dropped or could not map
    exactly (a torn tail, a torn Zstandard frame, unmapped fields); empty when the
    file was read exactly.
    """

    header: dict[str, Any]
    events: list[Envelope]
    report: list[str] = field(default_factory=list)


@dataclass
class LogText:
    """The complete lines of a log file, the header first, without their newlines.

    ``strict_lines`` event lines (after the header) sit in complete Zstandard frames,
    where no defect is tolerated; lines after them may be a torn tail.
    """

    lines: list[bytes]
    strict_lines: int
    compressed: bool
    report: list[str]


RowDecoder = Callable[[Any, int], list[Any]]
"""Turns one parsed line into the events it stores, given the next expected seq.

Raises :class:`MalformedRowError` when the line parses but cannot be a record; the
scanner treats that line like an unparsable one.
"""


class MalformedRowError(ValueError):
    """A line is JSON but not a record this reader understands."""


def corrupt(message: str, session_id: str, seq: int | None = None) -> NoReturn:
    """Raise the corrupt-log error (a function, so callers read as one line)."""
    raise CorruptSessionLogError(message, session_id=session_id, seq=seq)


def read_log_text(
    data: bytes, *, session_id: str, require_depth: bool = True
) -> LogText:
    """Split a plain or Zstandard log into complete lines (magic bytes decide).

    A final line without a newline is a torn write and is ignored. ``session_id``
    names the input in errors (the header, which holds the real id, is unread yet);
    ``require_depth`` is passed to :func:`parse_header` for a header-less file.
    """
    if zstd.is_zstd(data):
        return _read_zstd_text(data, session_id=session_id)
    body, newline, fragment = data.rpartition(b"\n")
    if not newline:
        _refuse_headerless(fragment, session_id, require_depth=require_depth)
    lines = body.split(b"\n")
    if not lines[0].strip():
        corrupt(EMPTY_LOG, session_id)
    report = []
    if fragment:
        report.append(
            f"ignored a torn final line without a newline ({len(fragment)} bytes)"
        )
    return LogText(lines, strict_lines=0, compressed=False, report=report)


def _refuse_headerless(
    fragment: bytes, session_id: str, *, require_depth: bool
) -> NoReturn:
    """A file without one complete line: name what is wrong with its first line."""
    if fragment.strip():
        parse_header(fragment, session_id=session_id, require_depth=require_depth)
    corrupt(EMPTY_LOG, session_id)


def _read_zstd_text(data: bytes, *, session_id: str) -> LogText:
    try:
        scan = zstd.scan_frames(data)
    except zstd.ZstdFrameError as error:
        raise CorruptSessionLogError(
            str(error), session_id=session_id, seq=None
        ) from None
    if not scan.frames:
        corrupt(EMPTY_ZSTD_LOG, session_id)
    texts: list[bytes] = []
    for start, end in scan.frames:
        try:
            texts.append(zstd.decompress_frame(data[start:end]))
        except zstandard.ZstdError:
            message = f"{_ZSTD_CORRUPT} frame at byte {start} failed validation"
            raise CorruptSessionLogError(
                message, session_id=session_id, seq=None
            ) from None
    if not (texts[0].endswith(b"\n") and texts[0].count(b"\n") == 1):
        corrupt(ZSTD_HEADER_FRAME, session_id)
    complete = b"".join(texts)
    if not complete.endswith(b"\n"):
        corrupt(ZSTD_TORN_RECORD, session_id)
    lines = complete[:-1].split(b"\n")
    if not lines[0].strip():
        corrupt(EMPTY_ZSTD_LOG, session_id)
    strict_lines = len(lines) - 1
    report = []
    if scan.torn_start is not None:
        torn_bytes = len(data) - scan.torn_start
        partial = zstd.decompress_prefix(data[scan.torn_start :])
        recovered_text, newline, _ = partial.rpartition(b"\n")
        recovered = recovered_text.split(b"\n") if newline else []
        lines.extend(recovered)
        report.append(
            f"torn final Zstandard frame at byte {scan.torn_start} ({torn_bytes}"
            f" bytes): recovered {len(recovered)} complete line(s) from it"
        )
    return LogText(lines, strict_lines=strict_lines, compressed=True, report=report)


class _NegativeZero(int):
    """The integer JSON text ``-0``, which JavaScript reads as -0, not 0."""


def _probe_int(text: str) -> int:
    return _NegativeZero(0) if text == "-0" else int(text)


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _is_depth(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _depth_is_negative_zero(line: bytes) -> bool:
    try:
        probe = json.loads(line, parse_int=_probe_int)
    except (ValueError, RecursionError):
        return False
    depth = probe.get("delegationDepth") if isinstance(probe, dict) else None
    return isinstance(depth, _NegativeZero)


def parse_header(
    line: bytes, *, session_id: str, require_depth: bool
) -> dict[str, Any]:
    """Check the header line's shape, then its version; return it without ``type``.

    A header needs ``type:"session"``, a numeric ``version``, a string ``id`` and a
    numeric ``createdAt``; ``delegationDepth`` must be a non-negative safe integer (not
    ``-0``), and is required when ``require_depth`` (our format always writes it).
    Extra keys are kept. Shape errors are corruption; a version other than 0 is
    :class:`UnsupportedSessionFormatError`.
    """
    try:
        value = loads(line)
    except (ValueError, RecursionError):
        raise CorruptSessionLogError(
            HEADER_NOT_JSON, session_id=session_id, seq=None
        ) from None
    if not isinstance(value, dict) or value.get("type") != "session":
        corrupt(NOT_A_HEADER, session_id)
    shaped = (
        _is_number(value.get("version"))
        and isinstance(value.get("id"), str)
        and _is_number(value.get("createdAt"))
    )
    if "delegationDepth" in value:
        depth = value["delegationDepth"]
        shaped = shaped and _is_depth(depth)
        shaped = shaped and not (depth == 0 and _depth_is_negative_zero(line))
    elif require_depth:
        shaped = False
    if not shaped:
        corrupt(NOT_A_HEADER, session_id)
    if value["version"] != SESSION_FORMAT_VERSION:
        message = (
            f"unsupported session format version {js_number(value['version'])}"
            f' for "{value["id"]}" (only v0 is supported)'
        )
        raise UnsupportedSessionFormatError(message)
    return {key: item for key, item in value.items() if key != "type"}


_UNPARSABLE: Final = object()
_MISSING: Final = object()


def _render(value: object) -> str:
    """A value in an error message, as JavaScript's template literal shows it."""
    if value is _MISSING:
        return "undefined"
    if type(value) is float:
        return repr(value)  # "3.0", so a float seq is not mistaken for the int
    return js_number(value)


def _is_turn_end(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "turn/end"


def scan_events(
    lines: Sequence[bytes],
    *,
    session_id: str,
    decode_row: RowDecoder,
    strict_lines: int = 0,
) -> tuple[list[Envelope], list[str]]:
    """Decode the event lines (header excluded) under the torn-tail rule.

    See docs/repair.md#torn-tails.

    Every complete line is parsed first to find the last ``turn/end``. Then the lines
    are walked in order; the first unparsable line, or the first event whose ``seq`` is
    not the next one, is a defect. At or before the last ``turn/end`` (or inside a
    complete Zstandard frame) it is corruption and raises; after it, the defect and
    every line following form a torn tail, dropped and reported. Event lines are not
    shape-validated here: the application validates what it imports.
    """
    values: list[object] = []
    for line in lines:
        try:
            values.append(loads(line))
        except (ValueError, RecursionError):
            values.append(_UNPARSABLE)
    last_turn_end = max(
        (index for index, value in enumerate(values) if _is_turn_end(value)),
        default=-1,
    )
    events: list[Envelope] = []
    for index, value in enumerate(values):
        line_no = index + 1
        expected = len(events)
        defect = _unparsable(line_no) if value is _UNPARSABLE else None
        rows: list[Any] = []
        if defect is None:
            try:
                rows = decode_row(value, expected)
            except MalformedRowError as error:
                defect = f"{_unparsable(line_no)} ({error})"
        if defect is None:
            defect = _seq_defect(rows, expected, line_no)
        if defect is None:
            events.extend(rows)
            continue
        if index <= last_turn_end:
            corrupt(defect, session_id, expected)
        if index < strict_lines:
            corrupt(ZSTD_TORN_RECORD, session_id, expected)
        dropped = len(values) - index
        reason = defect.removeprefix("corrupt session log: ")
        return events, [
            f"dropped a torn tail after the last turn/end: {dropped} line(s) from event"
            f" line {line_no} on ({reason})"
        ]
    return events, []


def _unparsable(line_no: int) -> str:
    return f"corrupt session log: unparsable committed event at line {line_no}"


def _seq_defect(rows: Sequence[Any], expected: int, line_no: int) -> str | None:
    for offset, event in enumerate(rows):
        seq = event.get("seq", _MISSING) if isinstance(event, dict) else _MISSING
        if type(seq) is not int or seq != expected + offset:
            return (
                f"corrupt session log: seq gap in committed region at line {line_no}"
                f" (expected {expected + offset}, got {_render(seq)})"
            )
    return None
