"""The listing, search, event and step pages (the session page is in
:mod:`~agentlog.infrastructure.web.session_page`)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from agentlog.infrastructure.web.html import (
    as_json,
    attr,
    clip,
    error_page,
    event_link,
    layout,
    link,
    session_url,
    step_link,
    text,
    when,
)
from agentlog.infrastructure.web.text import field

if TYPE_CHECKING:
    from agentlog.application.browse import Step
    from agentlog.application.query_models import (
        SessionEventTrace,
        SessionSummary,
        SessionSummaryPage,
    )
    from agentlog.application.search_models import SearchSessionPage
    from agentlog.domain.json import Envelope

FILTERS = (
    ("cwd", "cwd"),
    ("owner", "owner"),
    ("from", "created from"),
    ("to", "created to"),
)


def listing(
    page: SessionSummaryPage, filters: dict[str, str], more_url: str | None
) -> str:
    fields = "".join(
        f'<label>{label}<input name={name} value="{field(filters.get(name, ""))}"'
        f"{' type=date' if name in ('from', 'to') else ''}></label>"
        for name, label in FILTERS
    )
    form = (
        f'<form class=filters method=get action="/">{fields}'
        "<button>Filter</button></form>"
    )
    rows = "".join(_listing_row(item) for item in page.items)
    empty = "" if page.items else "<p class=empty>No sessions.</p>"
    more = link(more_url, "Older sessions →", "more", "next") if more_url else ""
    table = (
        "<table class=sessions><thead><tr><th>Session</th><th>cwd</th><th>owner</th>"
        "<th class=num>events</th><th>created</th><th>updated</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return layout("Sessions", f"<h1>Sessions</h1>{form}{table}{empty}{more}")


def _listing_row(item: SessionSummary) -> str:
    label = text(clip(item.title or item.first_prompt or "(untitled)", 160))
    marks = ""
    if item.parent_session:
        parent = session_url(item.parent_session)
        marks += link(parent, "fork", "mark")
    if item.live:
        marks += "<span class=mark>live</span>"
    return (
        f'<tr data-id="{attr(item.id)}"><td class=title>'
        f"{link(session_url(item.id), label)}{marks}"
        f"<div class=id>{text(item.id)}</div></td>"
        f"<td class=cwd>{text(item.cwd or '')}</td><td>{text(item.owner or '')}</td>"
        f"<td class=num>{item.event_count}</td><td>{when(item.created_at)}</td>"
        f"<td>{when(item.updated_at)}</td></tr>"
    )


def search_results(
    query: str, page: SearchSessionPage | None, more_url: str | None
) -> str:
    form = (
        '<form class=filters action="/search">'
        f'<input type=search name=q value="{field(query)}" aria-label=Search>'
        "<button>Search</button></form>"
    )
    if page is None:
        return layout("Search", f"<h1>Search</h1>{form}")
    items = []
    for item in page.items:
        hit = item.hit
        label = text(clip(item.title or item.session_id, 160))
        items.append(
            f"<li>{event_link(item.session_id, hit.seq, label)}"
            f" <span class=type>{text(hit.type)}</span>"
            f" <span class=seq>#{hit.seq}</span> <span class=id>"
            f"{text(item.session_id)}</span>"
            f"<p class=snippet>{_highlighted(hit.snippet, hit.highlights)}</p></li>"
        )
    empty = "" if page.items else "<p class=empty>No matches.</p>"
    more = link(more_url, "More results →", "more", "next") if more_url else ""
    body = f"<h1>Search</h1>{form}<ol class=hits>{''.join(items)}</ol>{empty}{more}"
    return layout("Search", body)


def _highlighted(snippet: str, highlights: list[list[int]]) -> str:
    """The snippet with each ``[start, end)`` highlight in ``<mark>``."""
    parts, at = [], 0
    for start, end in sorted((s, e) for s, e in highlights if 0 <= s < e):
        if start < at:
            continue
        parts.append(text(snippet[at:start]))
        parts.append(f"<mark>{text(snippet[start:end])}</mark>")
        at = end
    parts.append(text(snippet[at:]))
    return "".join(parts)


def event_page(sid: str, event: Envelope, trace: SessionEventTrace | None) -> str:
    seq = event["seq"]
    sources = event.get("sourceEventSeqs")
    links = (
        "<dl class=meta><dt>sources</dt><dd>"
        + (", ".join(event_link(sid, v) for v in sources) if sources else "—")
        + "</dd></dl><p class=empty>The log is too long to trace replacements "
        "here; <code>agentlog trace-event</code> does.</p>"
    )
    if trace is not None:

        def seqs(values: list[int]) -> str:
            return ", ".join(event_link(sid, v) for v in values) or "—"

        replaced_by = [] if trace.replaced_by is None else [trace.replaced_by]
        surface = trace.target.surface
        links = (
            "<dl class=meta>"
            f'<dt>surface</dt><dd><span class="surface {surface}">{surface}</span></dd>'
            f"<dt>replaced by</dt><dd>{seqs(replaced_by)}</dd>"
            f"<dt>replacement chain</dt><dd>{seqs(trace.replacement_chain)}</dd>"
            f"<dt>replaced</dt><dd>{seqs(trace.replaced_event_seqs)}</dd>"
            f"<dt>sources</dt><dd>{seqs(trace.source_event_seqs)}</dd>"
            f"<dt>derived</dt><dd>{seqs(trace.derived_event_seqs)}</dd></dl>"
        )
    steps = [
        link(session_url(sid), "session"),
        step_link(sid, seq, "what the model saw"),
    ]
    if seq > 0:
        steps.append(event_link(sid, seq - 1, f"← #{seq - 1}"))
    steps.append(event_link(sid, seq + 1, f"#{seq + 1} →"))
    nav = f"<nav class=pager>{' · '.join(steps)}</nav>"
    body = (
        f"<h1>#{seq} {text(event['type'])}</h1>{nav}{links}"
        f"<pre class=json>{text(as_json(event, indent=True))}</pre>"
    )
    return layout(f"#{seq}", body)


def step_page(sid: str, step: Step) -> str:
    added = set(step.added)
    items = "".join(
        f'<li class="{"added" if e["seq"] in added else ""}">'
        f"{event_link(sid, e['seq'])} <b>{text(e['type'])}</b>{_summary_of(e)}</li>"
        for e in step.events
    )
    hidden = step.total - len(step.events)
    if hidden:
        api = f"/api/sessions/{quote(sid, safe='')}/messages?at={step.seq}"
        items = (
            f"<li class=empty>{hidden} earlier surface events: "
            f"{link(api, 'all as JSON')}</li>{items}"
        )
    removed = ", ".join(f"#{s}" for s in step.removed) or "nothing"
    since = f"#{step.previous}" if step.previous is not None else "the start"
    steps = [link(session_url(sid), "session")]
    if step.seq > 0:
        steps.append(step_link(sid, step.seq - 1, f"← #{step.seq - 1}"))
    steps.append(step_link(sid, step.seq + 1, f"#{step.seq + 1} →"))
    nav = f"<nav class=pager>{' · '.join(steps)}</nav>"
    body = (
        f"<h1>What the model saw after #{step.seq}</h1>{nav}"
        f"<p>{step.total} surface events; since {text(since)}: "
        f"{len(step.added)} added, removed {text(removed)}.</p>"
        f"<ol class=step>{items}</ol>"
    )
    return layout(f"step #{step.seq}", body)


def _summary_of(event: Envelope) -> str:
    data = event.get("data")
    content = data.get("content") if isinstance(data, dict) else None
    pieces = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            pieces.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "tool-call":
            pieces.append(f"[tool call {block.get('name', '')}]")
    if not pieces:
        return ""
    return f"<p class=text>{text(clip(' '.join(pieces), 400))}</p>"


__all__ = ["error_page", "event_page", "listing", "search_results", "step_page"]
