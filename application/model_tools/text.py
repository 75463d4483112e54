"""The tools' results as text a model reads: titled, one fact per line, escaped.

Every value from the store (ids, titles, types, snippets, event text) passes
:func:`~agentlog.domain.visible.printable`, and the one JSON block (an event read
exactly) passes :func:`~agentlog.domain.visible.json_visible`, so no result carries
a raw control character, bidirectional override or lone surrogate. Times are ISO
8601 in UTC (:mod:`.times`). The layouts and fixed sentences are the original
tools'.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

from agentlog.application.model_tools.times import format_time
from agentlog.domain.json import dumps
from agentlog.domain.search_text import document_text
from agentlog.domain.visible import json_visible, printable

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from agentlog.application.model_tools.collect import Collected
    from agentlog.application.query_models import (
        SessionEventTrace,
        SessionEventWindow,
        SessionLineageNode,
        SessionLineageTrace,
        SessionRecord,
    )
    from agentlog.application.search_models import SearchHit, SessionSearchHit
    from agentlog.domain.json import Envelope

    TitleOf = Callable[[str], str | None]

CAPPED: Final = (
    "Result cap reached. Narrow the query or add filters to find additional matches."
)
NO_SESSION_MATCHES: Final = "No prior session matches found."
NO_EVENT_MATCHES: Final = "No prior event matches found."
NO_WORKSPACE: Final = (
    "cross-session search is unavailable because the caller session has no workspace"
)
NOT_VISIBLE: Final = "[not visible from this workspace]"
NEIGHBOUR_TEXT_MAX: Final = 500
"""Characters of a neighbouring event's text shown by ``session_event_read``."""
INDENT_MAX: Final = 16


def line(value: object) -> str:
    """A value from the store as one safe line."""
    return printable(str(value), one_line=True)


def title_text(title: str | None) -> str:
    return "untitled" if title is None else line(title)


def heading(session_id: str, title: str | None) -> str:
    return f"Session {line(session_id)} — {title_text(title)}"


def availability(record: SessionRecord) -> str:
    flags = [
        name
        for name, present in (("live", record.live), ("persisted", record.persisted))
        if present
    ]
    return ", ".join(flags) or "unavailable"


def seqs(values: Sequence[int]) -> str:
    return ", ".join(map(str, values)) if values else "none"


def hit_place(hit: SearchHit) -> str:
    return f"seq {hit.seq} | {line(hit.type)} | {hit.surface} | {format_time(hit.time)}"


# ------------------------------------------------------------------ searches


def session_search_text(
    found: Collected[SessionSearchHit],
    records: dict[str, SessionRecord],
    visible_parents: set[str],
) -> str:
    """``session_search``: each session with its strongest match."""
    if not found.items:
        return NO_SESSION_MATCHES
    lines = [f"Session search results ({len(found.items)}):"]
    for number, item in enumerate(found.items, 1):
        record = records.get(item.session_id)
        header = {} if record is None else record.header
        parent = header.get("parentSession")
        if isinstance(parent, str) and parent in visible_parents:
            parent_text = line(parent)
        elif parent is None and "seedLength" not in header:
            parent_text = "root"
        else:
            # A scoped header leaves out a parent the caller cannot see (outside
            # the scope, or missing); a seeded session still says it has one.
            parent_text = NOT_VISIBLE
        lines += [
            "",
            f"{number}. {heading(item.session_id, item.title)}",
            f"   Created: {format_time(header.get('createdAt'))}",
            f"   Parent: {parent_text}",
            f"   Availability: {'unknown' if record is None else availability(record)}",
            f"   Best match: {hit_place(item.hit)}",
            f"   Snippet: {line(item.hit.snippet)}",
        ]
    if found.capped:
        lines += ["", CAPPED]
    return "\n".join(lines)


def event_search_text(
    session_id: str, title: str | None, found: Collected[SearchHit]
) -> str:
    """``session_event_search``: one session's matching events."""
    lines = [heading(session_id, title)]
    if not found.items:
        return "\n".join([*lines, "", NO_EVENT_MATCHES])
    lines += ["", f"Event search results ({len(found.items)}):"]
    for number, hit in enumerate(found.items, 1):
        lines += [f"{number}. {hit_place(hit)}", f"   Snippet: {line(hit.snippet)}"]
    if found.capped:
        lines += ["", CAPPED]
    return "\n".join(lines)


# ------------------------------------------------------------------- traces


def _record_line(record: SessionRecord, title_of: TitleOf) -> str:
    session_id = str(record.header.get("id"))
    created = format_time(record.header.get("createdAt"))
    title = title_text(title_of(session_id))
    return f"{line(session_id)} — {title} | {created} | {availability(record)}"


def _descendants(
    nodes: Sequence[SessionLineageNode],
) -> Iterator[tuple[int, SessionRecord]]:
    """Depth-first, oldest sibling first, without recursion (any depth)."""
    stack = [(0, node) for node in reversed(nodes)]
    while stack:
        depth, node = stack.pop()
        yield depth, node.session
        stack.extend((depth + 1, child) for child in reversed(node.descendants))


def session_trace_text(
    trace: SessionLineageTrace, title_of: TitleOf, limit: int
) -> str:
    """``session_trace``: the target, its ancestors and its descendant tree.

    At most ``limit`` ancestors and ``limit`` descendants are listed (then how
    many more there are); a parent the caller cannot see is shown as not visible,
    never by its id.
    """
    target = trace.target
    target_id = str(target.header.get("id"))
    lines = [
        heading(target_id, title_of(target_id)),
        f"Created: {format_time(target.header.get('createdAt'))}",
        f"Availability: {availability(target)}",
        "",
        "Ancestors (nearest first):",
    ]
    if not trace.ancestors and trace.complete:
        lines.append("- none (target is a root session)")
    lines += [f"- {_record_line(r, title_of)}" for r in trace.ancestors[:limit]]
    if len(trace.ancestors) > limit:
        lines.append(f"- … {len(trace.ancestors) - limit} more ancestors not shown")
    if not trace.complete:
        lines.append(f"- {NOT_VISIBLE}")
    lines += ["", "Descendants:"]
    shown = 0
    total = 0
    for depth, record in _descendants(trace.descendants):
        total += 1
        if shown == limit:
            continue
        shown += 1
        indent = "  " * min(depth, INDENT_MAX)
        deep = f"(depth {depth + 1}) " if depth > INDENT_MAX else ""
        lines.append(f"{indent}- {deep}{_record_line(record, title_of)}")
    if total == 0:
        lines.append("- none")
    elif total > shown:
        lines.append(f"- … {total - shown} more descendants not shown")
    return "\n".join(lines)


def event_trace_text(
    session_id: str, title: str | None, trace: SessionEventTrace
) -> str:
    """``session_event_trace``: replacement and provenance links of one event."""
    target = trace.target
    replaced_by = "none" if trace.replaced_by is None else str(trace.replaced_by)
    return "\n".join(
        [
            heading(session_id, title),
            f"Target: seq {target.seq} | {line(target.type)} | {target.surface} "
            f"| {format_time(target.time)}",
            f"Replaced by: {replaced_by}",
            f"Replacement chain: {seqs(trace.replacement_chain)}",
            f"Events replaced by target: {seqs(trace.replaced_event_seqs)}",
            f"Direct provenance sources: {seqs(trace.source_event_seqs)}",
            f"Direct derived events: {seqs(trace.derived_event_seqs)}",
        ]
    )


# --------------------------------------------------------------------- read


def event_json(event: Envelope) -> str:
    """The event exactly, as indented JSON (compact when too deep to indent)."""
    try:
        text = json.dumps(event, ensure_ascii=False, indent=2)
    except (RecursionError, ValueError, TypeError):
        text = dumps(event).decode("utf-8").lstrip(" ")
    return json_visible(text)


def _neighbour(event: Envelope) -> str:
    place = (
        f"- seq {line(event.get('seq'))} | {line(event.get('type'))} "
        f"| {format_time(event.get('time'))}"
    )
    text = document_text(event)
    if not text:
        return f"{place} | (no semantic text)"
    if len(text) > NEIGHBOUR_TEXT_MAX:
        text = text[:NEIGHBOUR_TEXT_MAX] + "…"
    return f"{place}\n  " + printable(text).replace("\n", "\n  ")


def event_read_text(
    session_id: str, title: str | None, window: SessionEventWindow
) -> str:
    """``session_event_read``: the target in full, its neighbours summarised."""
    target = window.target
    seq = target["seq"]
    before = [event for event in window.events if event["seq"] < seq]
    after = [event for event in window.events if event["seq"] > seq]
    lines = [
        heading(session_id, title),
        f"Target event seq {line(seq)} | {line(target.get('type'))} "
        f"| {format_time(target.get('time'))}:",
        "```json",
        event_json(target),
        "```",
    ]
    if before:
        lines += ["", "Before:", *map(_neighbour, before)]
    if after:
        lines += ["", "After:", *map(_neighbour, after)]
    return "\n".join(lines)
