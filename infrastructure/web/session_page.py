"""A session's page: the conversation, the timeline, the lineage, the titles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentlog.infrastructure.web.html import (
    as_json,
    attr,
    clip,
    event_link,
    layout,
    link,
    long_text,
    session_url,
    step_link,
    text,
    when,
)
from agentlog.infrastructure.web.text import field

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentlog.application.browse import TimelinePage, TimelineRow
    from agentlog.application.query_models import (
        SessionLineageNode,
        SessionLineageTrace,
        SessionRecord,
        SessionSummary,
    )
    from agentlog.domain.json import Envelope

ROLES = {
    "user/message": "user",
    "assistant/message": "assistant",
    "tool/result": "tool",
}


@dataclass(frozen=True, slots=True)
class SessionView:
    """Everything a session page shows (each part read through the scope)."""

    summary: SessionSummary
    conversation: list[Envelope]
    surface_length: int
    conversation_start: int
    timeline: TimelinePage
    types: str
    lineage: SessionLineageTrace | None


def session_page(view: SessionView) -> str:
    summary = view.summary
    sid = summary.id
    label = summary.title or summary.first_prompt or sid
    head = (
        f"<h1 class=title>{text(clip(label, 200))}</h1><dl class=meta>"
        f"<dt>id</dt><dd>{text(sid)}</dd>"
        f"<dt>cwd</dt><dd>{text(summary.cwd or '')}</dd>"
        f"<dt>owner</dt><dd>{text(summary.owner or '')}</dd>"
        f"<dt>events</dt><dd id=event-count>{summary.event_count}</dd>"
        f"<dt>created</dt><dd>{when(summary.created_at)}</dd>"
        f"<dt>updated</dt><dd>{when(summary.updated_at)}</dd></dl>"
    )
    talk = _conversation(
        sid, view.conversation, view.surface_length, view.conversation_start
    )
    timeline = _timeline(sid, view.timeline, view.types, summary.event_count)
    side = _lineage(sid, view.lineage) + _titles(sid)
    body = (
        f"{head}<div class=columns><section class=conversation>"
        f"<h2>Conversation <small>{view.surface_length} on the surface</small></h2>"
        f"{talk}</section><aside>{side}</aside></div>"
        f"<section class=timeline><h2>Timeline</h2>{timeline}</section>"
    )
    return layout(text(clip(label, 80)), body, live_url=session_url(sid, "/live"))


# ------------------------------------------------------------ conversation


def _conversation(sid: str, events: list[Envelope], total: int, start: int) -> str:
    """Surface events as messages; a tool result is shown beside its call."""
    results = {_data(e).get("callId"): e for e in events if e["type"] == "tool/result"}
    paired: set[int] = set()
    parts = [_message(sid, event, results, paired) for event in events]
    parts = [
        part
        for event, part in zip(events, parts, strict=True)
        if event["seq"] not in paired
    ]
    pager = []
    if start > 0:
        earlier = session_url(sid, c=max(0, start - len(events)))
        pager.append(link(earlier, "← earlier"))
    if start + len(events) < total:
        later = session_url(sid, c=start + len(events))
        pager.append(link(later, "later →", "more"))
    nav = f"<nav class=pager>{' '.join(pager)}</nav>" if pager else ""
    return "".join(parts) + nav


def _data(event: Envelope) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _message(
    sid: str, event: Envelope, results: dict[Any, Envelope], paired: set[int]
) -> str:
    kind = event["type"]
    data = _data(event)
    seq = event["seq"]
    role = ROLES.get(kind, "context")
    error = kind == "tool/result" and bool(data.get("isError"))
    content = data.get("content")
    blocks = "".join(
        _block(block, results, paired)
        for block in (content if isinstance(content, list) else [content])
    )
    css = f"msg {role}" + (" error" if error else "")
    mark = " <span class=bad>error</span>" if error else ""
    seen = step_link(sid, seq, f"#{seq}")
    return (
        f'<article class="{css}" id="m{seq}"><header>{seen} '
        f"<b>{text(kind)}</b>{mark}</header>{blocks}</article>"
    )


def _block(block: object, results: dict[Any, Envelope], paired: set[int]) -> str:
    if isinstance(block, str):
        return long_text(block)
    if not isinstance(block, dict):
        return f"<pre>{text(clip(as_json(block), 4000))}</pre>"
    kind = block.get("type")
    if kind == "text":
        return long_text(block.get("text", ""))
    if kind == "reasoning":
        body = long_text(block.get("text", ""))
        return f"<details class=reasoning><summary>reasoning</summary>{body}</details>"
    if kind == "tool-call":
        return _tool_call(block, results, paired)
    return f"<pre>{text(clip(as_json(block), 4000))}</pre>"


def _tool_call(
    block: dict[str, Any], results: dict[Any, Envelope], paired: set[int]
) -> str:
    call_id = block.get("id")
    name = text(block.get("name") or "tool")
    result = results.get(call_id)
    arguments = block.get("arguments")
    shown = arguments if isinstance(arguments, str) else as_json(arguments)
    call = (
        f"<div class=call><b>{name}</b> <code>{text(call_id or '')}</code>"
        f"<pre>{text(clip(shown, 4000))}</pre></div>"
    )
    if result is None:
        answer = "<div class=result><i>no result on this page</i></div>"
        failed = False
    else:
        paired.add(result["seq"])
        answer = _tool_result(result)
        failed = bool(_data(result).get("isError"))
    mark = " <span class=bad>error</span>" if failed else ""
    return (
        f"<details class=tool><summary>tool call <b>{name}</b>{mark}</summary>"
        f"<div class=pair>{call}{answer}</div></details>"
    )


def _tool_result(event: Envelope) -> str:
    data = _data(event)
    error = bool(data.get("isError"))
    body = data.get("content")
    shown = "".join(
        long_text(b.get("text", ""))
        if isinstance(b, dict) and b.get("type") == "text"
        else f"<pre>{text(clip(as_json(b), 4000))}</pre>"
        for b in (body if isinstance(body, list) else [body])
    )
    mark = " <span class=bad>error</span>" if error else ""
    css = "result error" if error else "result"
    return f'<div class="{css}"><b>result #{event["seq"]}</b>{mark}{shown}</div>'


# ---------------------------------------------------------------- timeline


def _timeline(sid: str, page: TimelinePage, types: str, count: int) -> str:
    form = (
        f'<form class=filters method=get action="{attr(session_url(sid))}">'
        f'<input name=types value="{field(types)}" aria-label="Event types" '
        'placeholder="types, e.g. tool/call,tool/result">'
        f'<input name=t type=number min=0 value="{page.start}" aria-label="From seq">'
        "<button>Show</button></form>"
    )
    rows: list[str] = []
    run: list[TimelineRow] = []
    for row in [*page.rows, None]:
        if row is not None and row.event["type"] == "assistant/chunk":
            run.append(row)
            continue
        rows.append(_chunks(sid, run))
        run = []
        if row is not None:
            rows.append(_event_row(sid, row.event, row.surface))
    nav = []
    kinds = types or None
    if page.previous_start is not None:
        earlier = session_url(sid, t=page.previous_start, types=kinds)
        nav.append(link(earlier + "#timeline", "← earlier"))
    if page.next_start is not None:
        later = session_url(sid, t=page.next_start, types=kinds)
        nav.append(link(later + "#timeline", "later →", "more", "next"))
    return (
        f'{form}<table class=events id=timeline data-count="{count}"><thead><tr>'
        "<th class=num>seq</th><th>type</th><th>surface</th><th>time</th></tr></thead>"
        f"<tbody id=timeline-rows>{''.join(rows)}</tbody></table>"
        f"<nav class=pager>{' '.join(nav)}</nav>"
    )


def _chunks(sid: str, run: list[TimelineRow]) -> str:
    """Streamed chunks: one row, or one folded row for a run of them."""
    if not run:
        return ""
    if len(run) == 1:
        return _event_row(sid, run[0].event, run[0].surface)
    first, last = run[0].event["seq"], run[-1].event["seq"]
    inner = "".join(_event_row(sid, r.event, r.surface) for r in run)
    return (
        f"<tr class=chunks><td colspan=4><details><summary>{len(run)} streamed "
        f"chunks #{first}–#{last}</summary><table>{inner}</table></details></td></tr>"
    )


def _event_row(sid: str, event: Envelope, surface: str) -> str:
    seq = event["seq"]
    failed = _data(event).get("isError") is True or "error" in _data(event)
    mark = " <span class=bad>error</span>" if failed else ""
    return (
        f'<tr class="ev {surface}"><td class=num>{event_link(sid, seq, str(seq))}</td>'
        f"<td>{text(event['type'])}{mark}</td>"
        f'<td><span class="surface {surface}">{surface}</span></td>'
        f"<td>{when(event.get('time'))}</td></tr>"
    )


# ------------------------------------------------------------- the aside


def _id(record: SessionRecord) -> str:
    return str(record.header.get("id"))


def _lineage(sid: str, trace: SessionLineageTrace | None) -> str:
    if trace is None:
        return ""
    ancestors = "".join(
        f"<li>{link(session_url(_id(r)), text(_id(r)))}</li>"
        for r in reversed(trace.ancestors)
    )
    tree = _tree(trace.descendants)
    return (
        "<section class=lineage><h2>Lineage</h2>"
        + (f"<h3>Parents</h3><ol>{ancestors}</ol>" if ancestors else "")
        + f"<p>this session: <code>{text(sid)}</code></p>"
        + (f"<h3>Forks</h3>{tree}" if tree else "<p class=empty>No forks.</p>")
        + "</section>"
    )


def _tree(nodes: Iterable[SessionLineageNode]) -> str:
    """Nested lists, built without recursion (a chain may be thousands deep)."""
    roots = list(nodes)
    if not roots:
        return ""
    out = ["<ul class=tree>"]
    stack = [iter(roots)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            out.append("</ul></li>" if stack else "</ul>")
            continue
        sid = _id(node.session)
        out.append(f"<li>{link(session_url(sid), text(sid))}")
        if node.descendants:
            out.append("<ul>")
            stack.append(iter(node.descendants))
        else:
            out.append("</li>")
    return "".join(out)


def _titles(sid: str) -> str:
    history = link(session_url(sid, "/titles"), "every title, oldest first")
    return f"<section class=titles><h2>Title history</h2><p>{history}</p></section>"


def titles_page(sid: str, titles: list[Envelope] | None) -> str:
    """The session's ``session/title`` events (``None``: the log is too long)."""
    if titles is None:
        body = "<p class=empty>The log is too long to list them here.</p>"
    elif not titles:
        body = "<p class=empty>No title yet.</p>"
    else:
        body = (
            "<ol>"
            + "".join(
                f"<li>{event_link(sid, t['seq'])} "
                f"{text(_data(t).get('title', ''))}"
                f" <small>{when(t.get('time'))}</small></li>"
                for t in titles
            )
            + "</ol>"
        )
    back = link(session_url(sid), "session")
    return layout(
        "titles", f"<h1>Title history</h1><nav class=pager>{back}</nav>{body}"
    )


__all__ = ["SessionView", "session_page", "titles_page"]
