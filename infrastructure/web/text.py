"""Session strings as HTML text: escaped, and with nothing left that could act.

A session string may hold anything a JavaScript string can (docs/strings.md):
markup, lone surrogates, NUL and other control characters, bidi overrides. Every
such string reaches a page through :func:`text`, which escapes markup and shows each
invisible or layout-changing code point as a visible ``\\uXXXX`` badge, so the page
is valid UTF-8 and one session's text never reorders or hides the rest of the page.
"""

from __future__ import annotations

import html
import re

_SPECIAL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
"""Controls (tab and newline stay), bidi marks, embeddings, overrides and
isolates, zero-width and separator characters, and lone surrogates."""


def _badge(match: re.Match[str]) -> str:
    return f'<span class="cp">\\u{ord(match.group()):04x}</span>'


def text(value: object) -> str:
    """``value`` (a string, or anything shown as ``str``) as safe HTML text."""
    raw = value if isinstance(value, str) else str(value)
    escaped = html.escape(raw, quote=True)
    return _SPECIAL.sub(_badge, escaped)


def attr(value: object) -> str:
    """A value for an HTML attribute: escaped, special code points as escapes."""
    raw = value if isinstance(value, str) else str(value)
    escaped = html.escape(raw, quote=True)
    return _SPECIAL.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped)


_SURROGATE = re.compile("[\ud800-\udfff]")


def field(value: str) -> str:
    """A form field's value: escaped, kept as typed (a field isolates its text)
    except lone surrogates, which UTF-8 cannot carry (shown as U+FFFD)."""
    return _SURROGATE.sub("\ufffd", html.escape(value, quote=True))


def plain(value: str) -> str:
    """A string safe to encode as UTF-8 for JSON-free text (SSE ids, headers)."""
    return _SPECIAL.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


__all__ = ["attr", "field", "plain", "text"]
