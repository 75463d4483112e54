"""Human output of the command line: tables, trees and transcripts built with rich.

Every function turns a read's result into a renderable and nothing else, so the
commands stay one screen each and ``--json`` never goes through here. User text is
wrapped in :class:`~rich.text.Text`, never parsed as markup, and made
:func:`~agentlog.infrastructure.cli.terminal.printable` first (so a table measures
the escapes it will show).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from agentlog.domain.json import dumps
from agentlog.infrastructure.cli.terminal import printable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

    from agentlog.application.query import (
        SessionEventTrace,
        SessionEventWindow,
        SessionLineageNode,
        SessionLineageTrace,
        SessionRecord,
        SessionSummary,
    )
    from agentlog.application.summaries import SummaryRow
    from agentlog.domain.json import Envelope
    from agentlog.domain.title import TitleSnapshot

SUMMARY_WIDTH = 90
SURFACE_STYLES = {"current": "green", "shadowed": "yellow", "log-only": "dim"}
ROLE_STYLES = {"user": "bold cyan", "assistant": "bold magenta", "system": "bold"}
_SPACES = re.compile(r"\s+")


# ------------------------------------------------------------------ values


def when(ms: object) -> str:
    """Epoch milliseconds as ISO 8601 in UTC with the year
    (``2026-07-06T15:35:13Z``), the same on every machine; anything else as it
    is. ``--json`` keeps the epoch milliseconds."""
    if type(ms) is not int and type(ms) is not float:
        return "?" if ms is None else str(ms)
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def short_when(ms: object) -> str:
    """To the minute (``2026-07-06T15:35Z``): enough to tell sessions apart."""
    full = when(ms)
    return full[:16] + "Z" if full.endswith("Z") else full


def seq_ranges(values: Sequence[int]) -> str:
    """Seqs in their order, each run of consecutive ones as a range: ``5–87, 90``."""
    parts: list[str] = []
    start = previous = None
    for value in values:
        if previous is not None and value == previous + 1:
            previous = value
            continue
        if start is not None:
            parts.append(_run(start, previous))
        start = previous = value
    if start is not None:
        parts.append(_run(start, previous))
    return ", ".join(parts)


def _run(start: int, end: int | None) -> str:
    return str(start) if end is None or end == start else f"{start}–{end}"


def compact_json(value: object) -> str:
    return dumps(value).decode("utf-8").lstrip(" ")


def one_line(text: str, width: int = SUMMARY_WIDTH) -> str:
    """Whitespace collapsed, controls escaped, cut to ``width`` with an ellipsis."""
    text = printable(_SPACES.sub(" ", text).strip(), one_line=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def datum(value: object, style: str = "") -> Text:
    """A value from the store (an id, a type, a cwd) as one printable line."""
    return Text(printable(str(value), one_line=True), style=style)


def pretty_json(value: object) -> str:
    """Indented JSON for reading; compact when too deep for the indenting encoder."""
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (RecursionError, ValueError, TypeError):
        return compact_json(value)


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def block_text(block: object) -> str:
    """One content block as plain text (unknown block types by their type)."""
    data = _dict(block)
    kind = data.get("type")
    if kind in {"text", "reasoning"}:
        return str(data.get("text", ""))
    if kind == "tool-call":
        return f"→ {data.get('name')}({data.get('arguments', '')})"
    if kind == "tool-result":
        inner = content_text(data.get("content"))
        return f"← {data.get('toolCallId')}: {inner}"
    return f"[{kind}]"


def content_text(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return " ".join(block_text(block) for block in content)


def _source(data: Mapping[str, Any]) -> str:
    source = _dict(data.get("source"))
    plugin = source.get("plugin")
    return f"[{plugin}] " if isinstance(plugin, str) else ""


def describe(event: Mapping[str, Any]) -> str:
    """What an event says, in one line, for event lists and tables."""
    kind = event.get("type")
    data = _dict(event.get("data"))
    turn, step = data.get("turn"), data.get("step")
    if kind == "turn/start":
        trigger = _dict(data.get("trigger"))
        origin = _dict(trigger.get("source")).get("kind", "?")
        text = f"turn {turn} · {trigger.get('kind')} from {origin}"
    elif kind == "turn/end":
        text = f"turn {turn} · {_dict(data.get('reason')).get('kind')}"
    elif kind in {"step/start", "step/end"}:
        text = f"turn {turn} step {step}"
    elif kind in {"user/message", "context/message", "steering/message"}:
        text = _source(data) + content_text(data.get("content"))
    elif kind == "prompt/blocked":
        text = f"{content_text(data.get('content'))} (blocked: {data.get('reason')})"
    elif kind == "assistant/chunk":
        text = _describe_chunk(_dict(data.get("chunk")))
    elif kind == "assistant/message":
        text = content_text(data.get("content")) or "(no content)"
    elif kind == "tool/call":
        text = f"{data.get('callId')} {data.get('name')}({data.get('arguments')})"
    elif kind == "tool/result":
        error = " (error)" if data.get("isError") else ""
        text = f"{data.get('callId')}{error}: {content_text(data.get('content'))}"
    elif kind == "todo/write":
        text = _describe_todos(data.get("todos"))
    elif kind == "compact/summary":
        shadowed = data.get("shadowedSeqs")
        count = len(shadowed) if isinstance(shadowed, list) else "?"
        tokens = data.get("shadowedTokenCount")
        summary = content_text(data.get("summary"))
        text = f"{count} events, ~{tokens} tokens: {summary}"
    elif kind in {"compact/start", "compact/end"}:
        failure = data.get("error")
        text = f"turn {turn}" + (f" · error: {failure}" if failure else "")
    elif kind == "session/title":
        kind_of = _dict(data.get("source")).get("kind")
        text = f"“{data.get('title')}” ({kind_of})"
    else:
        text = compact_json(event.get("data"))
    return one_line(text)


def _describe_chunk(chunk: Mapping[str, Any]) -> str:
    kind = chunk.get("type")
    if kind in {"text-delta", "reasoning-delta"}:
        return f"{kind} {json.dumps(chunk.get('text'), ensure_ascii=False)}"
    if kind == "tool-call-delta":
        return f"{kind} {chunk.get('id')} {chunk.get('argumentsDelta')}"
    if kind == "block-start":
        return f"{kind} {chunk.get('blockType')}"
    if kind == "finish":
        return f"finish {_dict(chunk.get('reason')).get('kind')}"
    if kind == "usage":
        usage = _dict(chunk.get("usage"))
        return f"usage in {usage.get('inputTokens')} out {usage.get('outputTokens')}"
    return str(kind)


def _describe_todos(todos: object) -> str:
    if not isinstance(todos, list):
        return "?"
    items = [_dict(todo) for todo in todos]
    done = sum(1 for todo in items if todo.get("status") == "completed")
    active = [
        todo.get("content") for todo in items if todo.get("status") == "in_progress"
    ]
    now = f" · now: {active[0]}" if active else ""
    return f"{done}/{len(items)} done{now}"


def replacement_notes(events: Sequence[Envelope]) -> dict[int, str]:
    """``replaced by N`` for every shadowed event (the log is already validated)."""
    from agentlog.domain.surface import fold_surface  # not the listing's

    return {
        seq: f"replaced by {replacement.seq}"
        for replacement in fold_surface(events).replacements
        for seq in replacement.shadowed_seqs
    }


CHUNK = "assistant/chunk"


@dataclass(frozen=True)
class ChunkRun:
    """Consecutive ``assistant/chunk`` events shown as one row.

    A streamed reply is one event per token; ``show`` folds each run of them
    so a session reads as its turns, not as its tokens (``--chunks`` lists them).
    """

    events: tuple[Envelope, ...]

    @property
    def first_seq(self) -> object:
        return self.events[0].get("seq")

    @property
    def last_seq(self) -> object:
        return self.events[-1].get("seq")

    def describe(self) -> str:
        """How many, and the text they stream (reasoning and tool arguments too)."""
        pieces: list[str] = []
        for event in self.events:
            chunk = _dict(_dict(event.get("data")).get("chunk"))
            piece = chunk.get("text", chunk.get("argumentsDelta"))
            if type(piece) is str:
                pieces.append(piece)
        streamed = "".join(pieces)
        said = f": {json.dumps(streamed, ensure_ascii=False)}" if streamed else ""
        return one_line(f"{len(self.events)} chunks{said}")


def fold_chunks(events: Iterable[Envelope]) -> list[Envelope | ChunkRun]:
    """Each run of two or more consecutive chunk events (by seq) as one
    :class:`ChunkRun`; every other event as itself, in order."""
    rows: list[Envelope | ChunkRun] = []
    run: list[Envelope] = []

    def close_run() -> None:
        if len(run) > 1:
            rows.append(ChunkRun(tuple(run)))
        else:
            rows.extend(run)
        run.clear()

    for event in events:
        seq = event.get("seq")
        follows = bool(run) and type(seq) is int and seq == run[-1].get("seq", -2) + 1
        if event.get("type") == CHUNK and (not run or follows):
            run.append(event)
            continue
        close_run()
        if event.get("type") == CHUNK:
            run.append(event)
        else:
            rows.append(event)
    close_run()
    return rows


# ------------------------------------------------------------ renderables


class Indented:
    """Text wrapped under an indent, without the trailing padding ``Padding`` adds."""

    def __init__(self, text: Text, indent: int = 3) -> None:
        self.text = text
        self.indent = indent

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> RenderResult:
        width = max(1, options.max_width - self.indent)
        for line in self.text.wrap(console, width):
            line.rstrip()
            if line.plain:
                yield Segment(" " * self.indent)
            yield from line.render(console)
            yield Segment.line()


def mark(surface: str) -> Text:
    return Text(surface, style=SURFACE_STYLES.get(surface, ""))


def messages_view(messages: Sequence[Mapping[str, Any]]) -> RenderableType:
    """The derived LLM history as a transcript: role, then each block."""
    if not messages:
        return Text("(no messages)", style="dim")
    parts: list[RenderableType] = []
    for number, message in enumerate(messages, 1):
        role = str(message.get("role"))
        parts.append(datum(f"#{number} {role}", ROLE_STYLES.get(role, "bold")))
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            kind = _dict(block).get("type")
            style = "dim italic" if kind == "reasoning" else ""
            if kind in {"tool-call", "tool-result"}:
                style = "blue"
            prefix = "(reasoning) " if kind == "reasoning" else ""
            text = printable(prefix + block_text(block))
            parts.append(Indented(Text(text, style=style)))
    return Group(*parts)


def events_table(
    title: str,
    events: Iterable[Envelope | ChunkRun],
    surface: Mapping[int, str] | None = None,
    *,
    notes: Mapping[int, str] | None = None,
    highlight: int | None = None,
) -> Table:
    """Events one per row: seq, surface class (when known), type, what it says;
    a :class:`ChunkRun` is one row for its whole run."""
    table = Table(
        title=printable(title, one_line=True), box=box.SIMPLE_HEAD, title_justify="left"
    )
    table.add_column("seq", justify="right", no_wrap=True)
    if surface is not None:
        table.add_column("surface", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("event", overflow="fold")
    for event in events:
        if isinstance(event, ChunkRun):
            seq = event.first_seq
            row: list[RenderableType] = [Text(f"{seq}–{event.last_seq}")]
            kind: RenderableType = Text(f"{CHUNK} ×{len(event.events)}")
            summary = Text(event.describe())
        else:
            seq = event.get("seq")
            row = [datum(seq)]
            kind = datum(event.get("type"))
            summary = Text(describe(event))
            note = (notes or {}).get(seq) if type(seq) is int else None
            if note:
                summary.append(f"  {note}", style="yellow")
        if surface is not None:
            row.append(mark(surface.get(seq, "log-only") if type(seq) is int else "?"))
        row += [kind, summary]
        table.add_row(*row, style="reverse" if seq == highlight else None)
    return table


SUBAGENT = "subagent"
"""The ``origin`` of a delegated agent's session (the original harness's word)."""


def _parent_label(header: Mapping[str, Any]) -> str:
    """How a child names its parent: a subagent's is not a fork's."""
    return "subagent of" if header.get("origin") == SUBAGENT else "forked from"


def header_view(
    header: Mapping[str, Any], title: TitleSnapshot | None
) -> RenderableType:
    """A session's header fields and its current title."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("session", datum(header.get("id")))
    table.add_row("title", datum(title.title) if title else Text("(none)"))
    table.add_row("created", datum(when(header.get("createdAt"))))
    for key, label in (
        ("cwd", "cwd"),
        ("owner", "owner"),
        ("parentSession", _parent_label(header)),
        ("seedLength", "inherited events"),
        ("delegationDepth", "delegation depth"),
        ("origin", "origin"),
    ):
        if key in header:
            table.add_row(label, datum(header[key]))
    return table


class SummariesTable:
    """The listing, newest first, one session per row, at any width.

    Every column stays: the id and the title are cut with an ellipsis when the
    terminal is too narrow (a long id or first prompt), never the created time or
    the event count. ``--json`` has the full values.
    """

    TITLE_MIN = 12
    OVERHEAD = 13
    """Cell padding and the table's edges for four columns (``SIMPLE_HEAD``)."""

    def __init__(self, rows: Sequence[SessionSummary | SummaryRow], title: str) -> None:
        self.rows = rows
        self.title = title

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> RenderResult:
        cells = [
            (datum(row.id), datum(short_when(row.created_at)), str(row.event_count))
            for row in self.rows
        ]
        # Rich collapses whole columns when a row is too wide, so every width is
        # set here: the fixed columns first, then the id, then the title.
        created = max((len(when) for _, when, _ in cells), default=7)
        events = max((len(count) for _, _, count in cells), default=6)
        created, events = max(created, 7), max(events, 6)
        room = options.max_width - self.OVERHEAD - created - events
        longest_id = max((len(session_id) for session_id, _, _ in cells), default=2)
        # A whole UUID first; a longer id shares what is left with the title.
        id_width = max(8, min(longest_id, max(36, room // 2), room - self.TITLE_MIN))
        title_width = max(self.TITLE_MIN, room - id_width)
        table = Table(
            title=printable(self.title, one_line=True),
            box=box.SIMPLE_HEAD,
            title_justify="left",
        )
        table.add_column("id", no_wrap=True, overflow="ellipsis", width=id_width)
        table.add_column("created", no_wrap=True, width=created)
        table.add_column("events", justify="right", no_wrap=True, width=events)
        table.add_column(
            "title", overflow="ellipsis", no_wrap=True, max_width=title_width
        )
        for row, (session_id, created_at, count) in zip(self.rows, cells, strict=True):
            label = (
                datum(row.title) if row.title else datum(row.first_prompt or "", "dim")
            )
            if row.parent_session:
                parent = printable(row.parent_session[:8], one_line=True)
                kind = "subagent" if row.header.get("origin") == SUBAGENT else "fork"
                label.append(f" ({kind} of {parent})", style="dim")
            table.add_row(session_id, created_at, count, label)
        yield table


def summaries_table(
    rows: Sequence[SessionSummary | SummaryRow], title: str
) -> SummariesTable:
    """The listing as a renderable that keeps every column at any width."""
    return SummariesTable(rows, title)


def _record_label(record: SessionRecord, *, target: str) -> Text:
    header = record.header
    session_id = str(header.get("id"))
    label = datum(session_id, "bold" if session_id == target else "")
    label.append(f"  {printable(when(header.get('createdAt')), one_line=True)}", "dim")
    if "seedLength" in header:
        label.append(f"  forked with {header['seedLength']} events", style="dim")
    if session_id == target:
        label.append("  ◀ this session", style="cyan")
    return label


def lineage_view(trace: SessionLineageTrace) -> RenderableType:
    """Ancestors from the root down to the target, then its descendant tree."""
    target = str(trace.target.header.get("id"))
    chain = [*reversed(trace.ancestors), trace.target]
    if trace.complete:
        top = branch = Tree(_record_label(chain[0], target=target))
    else:
        missing = f"{trace.unresolved_parent_id}  (not in this store)"
        top = Tree(datum(missing, "dim"))
        branch = top.add(_record_label(chain[0], target=target))
    for record in chain[1:]:
        branch = branch.add(_record_label(record, target=target))
    stack: list[tuple[Tree, Sequence[SessionLineageNode]]] = [
        (branch, trace.descendants)
    ]
    while stack:
        parent, nodes = stack.pop()
        for node in nodes:
            child = parent.add(_record_label(node.session, target=target))
            stack.append((child, node.descendants))
    return top


def window_view(window: SessionEventWindow) -> RenderableType:
    """The events around a target, then the target in full."""
    target = window.target
    session_id = window.session.get("id")
    table = events_table(
        f"session {session_id} · seqs {window.start_seq}..{window.end_seq}",
        window.events,
        highlight=target.get("seq"),
    )
    body = Text(printable(pretty_json(target)))
    return Group(table, datum(f"event {target.get('seq')}", "bold"), body)


def event_trace_view(trace: SessionEventTrace) -> RenderableType:
    """Where an event sits: replacement chain and direct provenance."""
    record = trace.target
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()

    def seqs(values: Sequence[int]) -> Text:
        return Text(", ".join(map(str, values)) if values else "—")

    def ranges(values: Sequence[int]) -> Text:
        return Text(seq_ranges(values) or "—")

    table.add_row("event", datum(f"{record.seq} {record.type}"))
    table.add_row("surface", mark(record.surface))
    if trace.replaced_by is not None:
        table.add_row("replaced by", Text(str(trace.replaced_by)))
    table.add_row("replacement chain", seqs(trace.replacement_chain))
    table.add_row("replaces", ranges(trace.replaced_event_seqs))
    table.add_row("sources", ranges(trace.source_event_seqs))
    table.add_row("derived", ranges(trace.derived_event_seqs))
    return table
