"""Our JSONL session format, and the import/export that moves logs in and out.

A session travels as one file: a header line, then one event per line
(docs/persistence.md#jsonl-format), plain or Zstandard-compressed. Export writes exactly
what the store holds, so importing it again gives the same events; import also reads the
original harness's later logs (:mod:`agentlog.infrastructure.formats.harness`) and says
what it could not map.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from agentlog.domain.json import Envelope, Json, dumps, loads
from agentlog.infrastructure.formats import zstd
from agentlog.infrastructure.formats.harness import (
    decode_harness_log,
    looks_like_harness_row,
)
from agentlog.infrastructure.formats.logscan import (
    DecodedLog,
    parse_header,
    read_log_text,
    scan_events,
)
from agentlog.infrastructure.formats.placeholders import (
    apply_substitutions,
    check_substitutions,
    find_placeholders,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from agentlog.application import Sessions

__all__ = [
    "DecodedLog",
    "ImportResult",
    "LogFormat",
    "apply_substitutions",
    "decode_harness_log",
    "decode_log",
    "detect_format",
    "encode_log",
    "export_session",
    "find_placeholders",
    "import_log",
]

LogFormat = Literal["agentlog", "harness-head"]

HEADER_KEYS: Final = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "delegationDepth",
)
"""Header keys in the order the header line writes them (after ``type``)."""

_OPTIONAL_HEADER_KEYS: Final = ("cwd", "parentSession", "seedLength")


def encode_header_line(header: Mapping[str, Any]) -> bytes:
    """The header line (no newline): ``type``, the known keys in order, then extras.

    ``delegationDepth`` is always written (0 when absent); other optional keys are
    omitted when absent or None, never written as ``null``.
    """
    try:
        line: dict[str, Any] = {
            "type": "session",
            "version": header["version"],
            "id": header["id"],
            "createdAt": header["createdAt"],
        }
    except KeyError as error:
        msg = f"a session header needs version, id and createdAt; {error} is missing"
        raise ValueError(msg) from None
    for key in _OPTIONAL_HEADER_KEYS:
        if header.get(key) is not None:
            line[key] = header[key]
    depth = header.get("delegationDepth")
    line["delegationDepth"] = 0 if depth is None else depth
    for key, value in header.items():
        if key not in line and key != "type" and value is not None:
            line[key] = value
    return dumps(line)


def encode_log(
    header: Mapping[str, Any], events: Sequence[Envelope], *, compress: bool = False
) -> bytes:
    """Write a log: the header line, then each event as compact JSON, key order kept.

    Every line ends with a newline. With ``compress`` the result is Zstandard: one
    checksummed frame for the header and one for the events (one frame per write, as
    a first materialisation writes them). Raises ``ValueError`` when the events are
    not contiguous from seq 0, since the reader would refuse such a file.
    """
    head = encode_header_line(header) + b"\n"
    lines: list[bytes] = []
    for index, event in enumerate(events):
        seq = event.get("seq")
        if type(seq) is not int or seq != index:
            msg = f"event at index {index} has seq {seq!r}; events must be contiguous"
            raise ValueError(msg)
        lines.append(dumps(event))
    body = b"".join(line + b"\n" for line in lines)
    if not compress:
        return head + body
    frames = zstd.compress_frame(head)
    if body:
        frames += zstd.compress_frame(body)
    return frames


def decode_log(data: bytes, *, source: str) -> DecodedLog:
    """Read our JSONL format (plain or Zstandard, told by the magic bytes).

    Applies the read rules of docs/persistence.md#jsonl-format: the header's shape, then
    its version; a torn final line is ignored; a defect after the last ``turn/end`` is a
    torn tail, dropped and reported; one before it raises
    :class:`~agentlog.domain.errors.CorruptSessionLogError` naming the line. ``source``
    names
    the input (a path, say) in errors raised before the header is read.
    """
    text = read_log_text(data, session_id=source)
    header = parse_header(text.lines[0], session_id=source, require_depth=True)
    events, report = scan_events(
        text.lines[1:],
        session_id=header["id"],
        decode_row=_as_event,
        strict_lines=text.strict_lines,
    )
    return DecodedLog(header, events, [*text.report, *report])


def _as_event(value: Any, expected: int) -> list[Any]:
    """Our format stores one event per line, verbatim."""
    return [value]


def detect_format(data: bytes) -> LogFormat:
    """Tell our JSONL from the original harness's later format by content.

    The harness's later logs have rows without ``seq``/``time``, packed chunk rows,
    message-wrapped payloads, ``turn/start`` without a trigger, and headers without
    ``delegationDepth`` or with ``origin``; any of these means ``"harness-head"``.
    Anything else, unreadable files included, is ours (its reader then names the
    defect).
    """
    text = zstd.decompress_tolerant(data) if zstd.is_zstd(data) else data
    lines = text.split(b"\n")
    header = _try_loads(lines[0])
    if (
        isinstance(header, dict)
        and header.get("type") == "session"
        and ("delegationDepth" not in header or "origin" in header)
    ):
        return "harness-head"
    for line in lines[1:]:
        if looks_like_harness_row(_try_loads(line)):
            return "harness-head"
    return "agentlog"


def _try_loads(line: bytes) -> Json:
    try:
        return loads(line)
    except (ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class ImportResult:
    """The id of the session an import stored, and what it could not map exactly."""

    session_id: str
    report: list[str] = field(default_factory=list)


def import_log(
    app: Sessions,
    data_or_path: bytes | str | os.PathLike[str],
    *,
    strict: bool = False,
    substitutions: Mapping[str, str] | None = None,
) -> ImportResult:
    """Store a log file (ours or the harness's later format) as a new session.

    The events become the session's seed, so the application validates them with
    the seed pipeline (and the turn invariants when ``strict``); nothing is stored
    when that fails. ``substitutions`` fills ``{{name}}`` placeholders of snapshot
    logs. The header keeps its id, ``createdAt``, cwd, lineage and depth.
    """
    if isinstance(data_or_path, bytes):
        data, source = data_or_path, "<bytes>"
    else:
        data, source = Path(data_or_path).read_bytes(), os.fspath(data_or_path)
    checked = check_substitutions(substitutions)
    if detect_format(data) == "harness-head":
        decoded = decode_harness_log(data, source=source, substitutions=checked)
        report = list(decoded.report)
    else:
        decoded = decode_log(data, source=source)
        apply_substitutions([decoded.header, decoded.events], checked)
        report = [*decoded.report, *_placeholder_report(decoded)]
    header = decoded.header
    report += [
        f'header key "{key}" cannot be stored; dropped'
        for key in header
        if key not in HEADER_KEYS
    ]
    handle = app.create_session(
        cwd=header.get("cwd"),
        session_id=header["id"],
        seed=decoded.events,
        parent_session=header.get("parentSession"),
        created_at=header["createdAt"],
        seed_length=header.get("seedLength"),
        delegation_depth=header.get("delegationDepth"),
        strict=strict,
    )
    app.close(handle)
    if not decoded.events:
        report.append("the log holds no events; nothing was stored")
    return ImportResult(handle.id, report)


def _placeholder_report(decoded: DecodedLog) -> list[str]:
    return [
        f"placeholder {placeholder} has no substitution; kept literally"
        f" ({count} occurrence(s))"
        for placeholder, count in find_placeholders(
            [decoded.header, decoded.events]
        ).items()
    ]


def export_session(app: Sessions, session_id: str, *, compress: bool = False) -> bytes:
    """The session as our JSONL (Zstandard with ``compress``), exactly as stored.

    A live session's unflushed events are included, as every read includes them.
    """
    return encode_log(
        app.header(session_id), app.read_events(session_id), compress=compress
    )
