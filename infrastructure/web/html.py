"""Small HTML builders shared by the pages: links, times, the page layout.

Every session string reaches a page through :func:`text` or :func:`attr`; no page
holds an inline script or style, so the Content-Security-Policy forbids both.
"""

from __future__ import annotations

import datetime
import json
from urllib.parse import quote, urlencode

from agentlog.domain.json import dumps
from agentlog.infrastructure.web.text import attr, text

PREVIEW = 600
"""Characters of a long text shown before the rest is folded away."""


def session_url(session_id: str, tail: str = "", **query: object) -> str:
    """``/s/<id><tail>?<query>`` (``None`` values left out)."""
    url = f"/s/{quote(session_id, safe='')}{tail}"
    params = {k: str(v) for k, v in query.items() if v is not None}
    return url + ("?" + urlencode(params) if params else "")


def link(href: str, label: str, css: str = "", rel: str = "") -> str:
    """An ``<a>``; ``label`` is already HTML-safe."""
    extra = (f" class={css}" if css else "") + (f" rel={rel}" if rel else "")
    return f'<a href="{attr(href)}"{extra}>{label}</a>'


def event_link(session_id: str, seq: int, label: str | None = None) -> str:
    return link(session_url(session_id, f"/event/{seq}"), label or f"#{seq}")


def step_link(session_id: str, seq: int, label: str | None = None) -> str:
    return link(session_url(session_id, f"/step/{seq}"), label or f"#{seq}")


def when(value: object) -> str:
    """An epoch-ms time as UTC ``YYYY-MM-DD HH:MM:SS`` (anything else as text)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
        except (OverflowError, OSError, ValueError):
            return text(value)
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else text(value)


def clip(value: str, size: int) -> str:
    return value if len(value) <= size else value[: size - 1] + "…"


def as_json(value: object, *, indent: bool = False) -> str:
    """JSON text of any stored value (deep data too), lone surrogates escaped."""
    raw = dumps(value).decode("utf-8").lstrip(" ")
    if not indent:
        return raw
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return raw


def long_text(value: object) -> str:
    """A paragraph; past ``PREVIEW`` characters the rest is folded."""
    raw = value if isinstance(value, str) else as_json(value)
    if len(raw) <= PREVIEW:
        return f"<p class=text>{text(raw)}</p>"
    rest = len(raw) - PREVIEW
    return (
        f"<p class=text>{text(raw[:PREVIEW])}…</p><details class=rest>"
        f"<summary>{rest} more characters</summary>"
        f"<p class=text>{text(raw[PREVIEW:])}</p></details>"
    )


def layout(title: str, body: str, *, live_url: str | None = None) -> str:
    """The page around ``body``; ``title`` and ``body`` are already HTML-safe."""
    live = f' data-live="{attr(live_url)}"' if live_url else ""
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{title} · agentlog</title>"
        '<link rel=stylesheet href="/static/viewer.css">'
        '<script src="/static/viewer.js" defer></script>'
        f"</head><body{live}><header class=top>"
        '<a class=brand href="/">agentlog</a>'
        '<form class=search action="/search" role=search>'
        '<input type=search name=q placeholder="Search content" aria-label=Search>'
        '</form><a href="/api">API</a></header>'
        f"<main>{body}</main></body></html>"
    )


def error_page(status: int, message: str) -> str:
    body = f"<h1>{status}</h1><p class=error>{text(message)}</p>"
    return layout(str(status), body)


__all__ = [
    "as_json",
    "attr",
    "clip",
    "error_page",
    "event_link",
    "layout",
    "link",
    "long_text",
    "session_url",
    "step_link",
    "text",
    "when",
]
