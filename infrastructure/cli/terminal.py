"""What may reach a terminal: data shown as visible escapes, secrets masked.

Session data and ids are opaque strings: an ``ESC [2J`` in a tool result or an OSC
title sequence in an id would otherwise drive the user's terminal, and a lone
surrogate (an id typed as ``$'\\xff'``) cannot be encoded at all. :func:`printable`
is the one function every human output goes through; the console of
:mod:`~agentlog.infrastructure.cli.program` applies it once more to every segment it
writes, so a path that forgot it still cannot emit a raw control character.
"""

from __future__ import annotations

import re
from typing import Final

from agentlog.infrastructure.store_url import mask_url

_ALWAYS: Final = (
    "\x00-\x08\x0b-\x1f"  # C0 controls except tab and newline (ESC, BEL, CR, ...)
    "\x7f-\x9f"  # DEL and the C1 controls (CSI, OSC, ... as single characters)
    "\u202a-\u202e\u2066-\u2069"  # bidirectional overrides and isolates
    "\ud800-\udfff"  # lone surrogates: not encodable, so not printable
)
_UNSAFE: Final = re.compile(f"[{_ALWAYS}]")
_UNSAFE_IN_LINE: Final = re.compile(f"[{_ALWAYS}\t\n]")
_URL: Final = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"]+")
_HELP_EXAMPLE: Final = "//user:password@"
"""The URL form the help and errors show as an example; it holds no secret."""
_PASSWORD_SETTING: Final = re.compile(r"(?i)\b(password\s*=\s*)('[^']*'|\S+)")


_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    character = match.group()
    code = ord(character)
    if character in _SHORT:
        return _SHORT[character]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character as a visible escape (``\\x1b``).

    Tabs and newlines stay where text has lines (a transcript); ``one_line`` escapes
    them too, for an id or a table cell, where a line break would mislead.
    """
    return (_UNSAFE_IN_LINE if one_line else _UNSAFE).sub(_escaped, text)


def mask_secrets(text: str) -> str:
    """Every URL's password (``user:***@``) and ``password=`` setting masked."""
    text = _URL.sub(_masked_url, text)
    return _PASSWORD_SETTING.sub(r"\1***", text)


def _masked_url(match: re.Match[str]) -> str:
    url = match.group()
    return url if _HELP_EXAMPLE in url else mask_url(url)
