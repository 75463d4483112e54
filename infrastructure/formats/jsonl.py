"""Our JSONL session format: read a log file for import, write one for export.

A session travels as one file: a header line, then one event per line (``docs/``),
plain or Zstandard-compressed. A log in our writer's own form is taken exactly as
written — ``export`` gives back the same bytes; any other spelling of the same JSON
(escapes, spacing, number forms, key order) is taken by value and reported as
normalised; a defect is refused naming the file line. The original
harness's later logs (:mod:`agentlog.infrastructure.formats.harness`) are mapped onto
our vocabulary, with a report of what was not exact. The use cases that store or
fetch the sessions are :mod:`agentlog.application.transfer`'s.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Literal

from agentlog.application.transfer import (
    ImportResult,
    export_events,
    import_session,
)
from agentlog.domain.errors import AgentlogError, LogImportError
from agentlog.domain.header import HEADER_KEYS
from agentlog.domain.json import Envelope, Json, dumps, loads
from agentlog.infrastructure.formats import zstd
from agentlog.infrastructure.formats.harness import (
    decode_harness_log,
    looks_like_harness_row,
)
from agentlog.infrastructure.formats.logscan import (
    DecodedLog,
    Line,
    LogLines,
    corrupt,
    parse_header,
    scan_events,
)
from agentlog.infrastructure.formats.placeholders import (
    apply_substitutions,
    check_substitutions,
    find_placeholders,
    placeholder_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from contextlib import AbstractContextManager

    from agentlog.application import Sessions

__all__ = [
    "DecodedLog",
    "ImportResult",
    "LogFile",
    "LogFormat",
    "apply_substitutions",
    "decode_harness_log",
    "decode_log",
    "detect_format",
    "encode_log",
    "export_session",
    "find_placeholders",
    "import_log",
    "open_log",
    "write_log",
]

LogFormat = Literal["agentlog", "harness-head"]

ZSTD_SUFFIXES: Final = (".zst", ".zstd")
"""File suffixes that ask for Zstandard on export (reading goes by magic bytes)."""

DETECT_LINES: Final = 256
"""Event lines read to tell the later format from ours (it shows in the first)."""

_OPTIONAL_HEADER_KEYS: Final = ("cwd", "parentSession", "seedLength")


# ----------------------------------------------------------------------- writing


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
        raise LogImportError(msg) from None
    for key in _OPTIONAL_HEADER_KEYS:
        if header.get(key) is not None:
            line[key] = header[key]
    depth = header.get("delegationDepth")
    line["delegationDepth"] = 0 if depth is None else depth
    for key, value in header.items():
        if key not in line and key != "type" and value is not None:
            line[key] = value
    return dumps(line).removeprefix(b" ")


def encode_event(event: Envelope) -> bytes:
    """One event line without its newline: compact JSON, key order kept.

    :func:`~agentlog.domain.json.dumps` marks text only its exact decoder reads
    (lone surrogates, deep nesting, huge integers) with a leading space; a log line
    never carries it (JavaScript's ``JSON.stringify`` writes the same text bare).
    """
    return dumps(event).removeprefix(b" ")


def write_log(
    sink: BinaryIO,
    header: Mapping[str, Any],
    events: Iterable[Envelope],
    *,
    compress: bool = False,
) -> None:
    """Write a log as the events come: the header line, then one event per line.

    Every line is compact JSON with its key order kept and ends with a newline. With
    ``compress`` the result is Zstandard: one checksummed frame for the header and
    one for the events, as a first materialisation writes them. Raises
    :class:`~agentlog.domain.errors.LogImportError` when the events are not
    contiguous from seq 0, since the reader would refuse such a file.
    """
    head = encode_header_line(header) + b"\n"
    body = _event_lines(events)
    if not compress:
        sink.write(head)
        for piece in body:
            sink.write(piece)
        return
    sink.write(zstd.compress_frame(head))
    zstd.write_frame(sink, body)


def _event_lines(events: Iterable[Envelope]) -> Iterator[bytes]:
    """The event lines, a few hundred per piece (one write per line is slow)."""
    numbered = enumerate(events)
    while chunk := list(itertools.islice(numbered, 256)):
        pieces = []
        for index, event in chunk:
            seq = event.get("seq")
            if type(seq) is not int or seq != index:
                msg = (
                    f"event at index {index} has seq {seq!r}; events must be contiguous"
                )
                raise LogImportError(msg)
            pieces.append(encode_event(event))
        yield b"\n".join(pieces) + b"\n"


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> int:
    """Write a file whole or not at all: into a temporary sibling, then renamed.

    An export that fails half-way (a full disk, an interrupt) leaves any earlier
    file at ``path`` untouched and no partial one. A missing folder is named as
    such (not the temporary file), and the file gets the permissions any new
    file would (``0o666`` less the umask). Returns the bytes written.
    """
    folder = path.parent
    if not folder.is_dir():
        reason = "is not a folder" if folder.exists() else "no such folder"
        msg = f"cannot write {path}: {reason}: {folder}"
        raise FileNotFoundError(msg)
    descriptor, name = tempfile.mkstemp(
        dir=folder, prefix=f".{path.name}.", suffix=".tmp"
    )
    temporary = Path(name)
    try:
        os.fchmod(descriptor, 0o666 & ~_umask())
        with open(descriptor, "wb") as sink:
            write(sink)
            sink.flush()
            os.fsync(sink.fileno())
            size = sink.tell()
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return size


def _umask() -> int:
    """The process's umask (reading it means setting it, so it is set back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def encode_log(
    header: Mapping[str, Any], events: Iterable[Envelope], *, compress: bool = False
) -> bytes:
    """The whole log as bytes (see :func:`write_log`)."""
    sink = io.BytesIO()
    write_log(sink, header, events, compress=compress)
    return sink.getvalue()


# ----------------------------------------------------------------------- reading


def detect_format(data: bytes) -> LogFormat:
    """Tell our JSONL from the original harness's later format by content."""
    log = LogLines(io.BytesIO(data), source="<bytes>")
    try:
        return _detect(list(itertools.islice(log, DETECT_LINES + 1)))
    except AgentlogError:
        return "agentlog"


def _detect(lines: list[Line]) -> LogFormat:
    """The later format shows in its header or in its first rows.

    Its headers may lack ``version`` or carry keys ours never holds (``origin``);
    its rows have shapes ours never holds (:func:`looks_like_harness_row`).
    Anything else is ours, and its reader names any defect.
    """
    if not lines:
        return "agentlog"
    header = _try_loads(lines[0].text)
    if isinstance(header, dict) and header.get("type") == "session":
        extra = set(header) - {"type", *HEADER_KEYS}
        if extra or "version" not in header:
            return "harness-head"
    for line in lines[1:]:
        if looks_like_harness_row(_try_loads(line.text)):
            return "harness-head"
    return "agentlog"


def _try_loads(line: bytes) -> Json:
    try:
        return loads(line)
    except (ValueError, RecursionError):
        return None


def decode_log(data: bytes, *, source: str) -> DecodedLog:
    """Read our JSONL format (plain or Zstandard) into memory, under its read rules.

    The header's shape, then its version; a torn final line is ignored; a defect
    after the last ``turn/end`` is a torn tail, dropped and reported; one before it
    raises :class:`~agentlog.domain.errors.CorruptSessionLogError` naming the file
    line. ``source`` names the input in errors.
    """
    log = LogFile(
        lambda: io.BytesIO(data),
        name=source,
        native=True,
        report_placeholders=False,
        report_normalised=False,
    )
    numbered = list(log.events("reading"))
    return DecodedLog(
        dict(log.header),
        [event for _, event in numbered],
        list(log.report),
        [line for line, _ in numbered],
    )


class LogFile:
    """A log file opened for import: :class:`~agentlog.application.transfer.LogSource`.

    Our format is streamed: every pass reads the file again, line by line, so a log
    of any size is imported in bounded memory. The later format is mapped whole (its
    mapping looks across events), once, on the first pass.
    """

    def __init__(
        self,
        opener: Callable[[], AbstractContextManager[BinaryIO]],
        *,
        name: str,
        substitutions: Mapping[str, str] | None = None,
        on_bytes: Callable[[str, int], None] | None = None,
        native: bool | None = None,
        report_placeholders: bool = True,
        report_normalised: bool = True,
        size: int | None = None,
        fresh_id: str | None = None,
    ) -> None:
        self.opener = opener
        self.name = name
        self.size = size
        """The file's size in bytes, when known (for progress)."""
        self.substitutions = check_substitutions(substitutions)
        self.on_bytes = on_bytes
        self.report: list[str] = []
        self.report_placeholders = report_placeholders
        self.report_normalised = report_normalised
        self._placeholders: dict[str, int] = {}
        with opener() as stream:
            log = LogLines(stream, source=name)
            first = list(itertools.islice(log, DETECT_LINES + 1))
            if not first:
                list(log)  # the reader names what is wrong with a line-less file
                corrupt(log.empty_message, name)
        self._id_notes: list[str] = []
        if fresh_id is not None:
            self._fill_placeholder_id(first[0].text, fresh_id)
        self.format: LogFormat = (
            "agentlog"
            if native
            else "harness-head"
            if native is False
            else _detect(first)
        )
        if self.format == "agentlog":
            raw = parse_header(first[0].text, source=name, require_depth=False)
            self._native_header = raw
            header = apply_substitutions(dict(raw), self.substitutions)
            self.header: dict[str, Any] = header
            self._mapped: DecodedLog | None = None
        else:
            with opener() as stream:
                self._mapped = decode_harness_log(
                    stream, source=name, substitutions=self.substitutions
                )
            self.header = self._mapped.header

    def _fill_placeholder_id(self, header_line: bytes, fresh_id: str) -> None:
        """A header id that is a placeholder (``{{sessionId}}``) is the new id.

        Its other occurrences in the log (a snapshot redacts the session's id
        wherever it appears) get the same id, unless the caller filled it.
        """
        header = _try_loads(header_line)
        old = header.get("id") if isinstance(header, dict) else None
        name = placeholder_name(old)
        if name is None or name in self.substitutions:
            return
        self.substitutions = {**self.substitutions, name: fresh_id}
        self._id_notes.append(
            f"the header id {old} is a placeholder: the session and every"
            f" {old} in its events take the new id {fresh_id}"
        )

    def events(self, phase: str) -> Iterator[tuple[int, Envelope]]:
        """A fresh pass over ``(file line, event)``."""
        if self._mapped is not None:
            self.report = [*self._id_notes, *self._mapped.report]
            return zip(self._mapped.lines, self._mapped.events, strict=True)
        return self._native_events(phase)

    def _native_events(self, phase: str) -> Iterator[tuple[int, Envelope]]:
        report: list[str] = []
        counter = self.on_bytes
        with self.opener() as stream:
            log = LogLines(
                stream,
                source=self.name,
                on_bytes=None if counter is None else lambda size: counter(phase, size),
            )
            lines = iter(log)
            header_line = next(lines)
            normalised = 0 if self._header_in_our_form(header_line) else 1
            for line, event in scan_events(
                lines,
                log=log,
                session_id=str(self._native_header["id"]),
                decode_row=_as_event,
                report=report,
            ):
                if encode_event(event) != line.text:
                    event = _reparsed(line.text, event)
                    normalised += encode_event(event) != line.text
                if b"{{" in line.text:
                    event = apply_substitutions(event, self.substitutions)
                    self._count_placeholders(event)
                yield line.number, event
        self.report = [
            *self._id_notes,
            *log.report,
            *report,
            *self._header_report(),
        ]
        if normalised and self.report_normalised:
            lines_word = "line" if normalised == 1 else "lines"
            self.report.append(
                f"normalised {normalised} {lines_word}: export will differ in bytes,"
                " not in values"
            )

    def _header_in_our_form(self, line: Line) -> bool:
        """Whether the header line is byte for byte what our writer writes.

        A header without ``delegationDepth`` counts as ours: the report already
        says it is stored and exported as 0.
        """
        expected = encode_header_line(self._native_header)
        if "delegationDepth" not in self._native_header:
            expected = expected.replace(b',"delegationDepth":0', b"", 1)
        return expected == line.text

    def _count_placeholders(self, value: Json) -> None:
        if self.report_placeholders:
            for placeholder, count in find_placeholders(value).items():
                self._placeholders[placeholder] = (
                    self._placeholders.get(placeholder, 0) + count
                )

    def _header_report(self) -> list[str]:
        notes = []
        if "delegationDepth" not in self._native_header:
            notes.append("the header has no delegationDepth; stored and exported as 0")
        self._count_placeholders(self.header)
        notes += [
            f"placeholder {placeholder} has no substitution; kept literally"
            f" ({count} occurrence(s))"
            for placeholder, count in self._placeholders.items()
        ]
        self._placeholders = {}
        return notes


def _reparsed(text: bytes, event: Envelope) -> Envelope:
    """The line parsed exactly, when the fast parse lost something.

    The fast parser reads integers past 64 bits as floats; the exact one (what
    :func:`~agentlog.domain.json.loads` uses for text marked with a leading space)
    keeps them, and deep nesting and lone surrogates too. Only lines whose fast
    parse does not re-encode to the same bytes pay for it.
    """
    try:
        exact = loads(b" " + text)
    except (ValueError, RecursionError):
        return event
    return exact if isinstance(exact, dict) else event


def _as_event(value: Any, expected: int) -> list[Any]:
    """Our format stores one event per line, verbatim."""
    return [value]


def open_log(
    path: str | os.PathLike[str],
    *,
    substitutions: Mapping[str, str] | None = None,
    on_bytes: Callable[[str, int], None] | None = None,
    fresh_id: str | None = None,
) -> LogFile:
    """Open a log file for import (``-`` is standard input, spooled to a temp file).

    ``fresh_id`` is the id the import will give the session (``--new-id``): a
    placeholder header id is filled with it.
    """
    name = os.fspath(path)
    if name == "-":
        spool = _spool_stdin()
        return LogFile(
            lambda: _reopen(spool),
            name="<stdin>",
            substitutions=substitutions,
            on_bytes=on_bytes,
            size=spool.tell(),
            fresh_id=fresh_id,
        )
    file = Path(path)
    return LogFile(
        lambda: file.open("rb"),
        name=name,
        substitutions=substitutions,
        on_bytes=on_bytes,
        size=file.stat().st_size,
        fresh_id=fresh_id,
    )


def _spool_stdin() -> BinaryIO:
    """Standard input, copied to an anonymous file so it can be read twice."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the import
    while chunk := sys.stdin.buffer.read(1 << 20):
        spool.write(chunk)
    return spool


def _reopen(spool: BinaryIO) -> AbstractContextManager[BinaryIO]:
    """The spool from its start; leaving the ``with`` keeps it open for a next pass."""
    spool.seek(0)
    return contextlib.nullcontext(spool)


# ------------------------------------------------------------- whole-file helpers


def import_log(
    app: Sessions,
    data_or_path: bytes | str | os.PathLike[str],
    *,
    strict: bool = False,
    substitutions: Mapping[str, str] | None = None,
) -> ImportResult:
    """Store a log file (ours or the harness's later format) as a new session.

    A file path or the file's bytes; see
    :func:`~agentlog.application.transfer.import_session` for the rules.
    """
    if isinstance(data_or_path, bytes):
        data = data_or_path
        log = LogFile(
            lambda: io.BytesIO(data), name="<bytes>", substitutions=substitutions
        )
    elif isinstance(data_or_path, (str, os.PathLike)):
        try:
            log = open_log(data_or_path, substitutions=substitutions)
        except (OSError, ValueError) as error:  # missing, unreadable, NUL in the path
            if isinstance(error, AgentlogError):
                raise
            reason = getattr(error, "strerror", None) or str(error)
            msg = f"cannot read {os.fspath(data_or_path)!r}: {reason}"
            raise LogImportError(msg) from error
    else:
        kind = type(data_or_path).__name__
        msg = f"import_log needs a path or the file's bytes, got {kind}"
        raise LogImportError(msg)
    return import_session(app, log, strict=strict)


def export_session(app: Sessions, session_id: str, *, compress: bool = False) -> bytes:
    """The session as our JSONL (Zstandard with ``compress``), exactly as stored.

    A live session's unflushed events are included, as every read includes them.
    """
    return encode_log(
        app.header(session_id), export_events(app, session_id), compress=compress
    )
