"""Text that may reach a person or a model: control characters made visible.

Session data and ids are opaque strings: an ``ESC [2J`` in a tool result or an OSC
title sequence in an id would drive a terminal, a bidirectional override would make
text read differently from what it holds, and a lone surrogate (an id typed as
``$'\\xff'``) cannot be encoded at all. This module holds the one rule for which
characters are unsafe and the two ways of showing them: as visible escapes in text
(:func:`printable`, used by the command line and the model tools) and as ``\\u``
escapes inside JSON (:func:`json_visible`, which decode to the same strings).
"""

from __future__ import annotations

import re
from typing import Final

_ALWAYS: Final = (
    "\x00-\x08\x0b-\x1f"  # C0 controls except tab and newline (ESC, BEL, CR, ...)
    "\x7f-\x9f"  # DEL and the C1 controls (CSI, OSC, ... as single characters)
    "\u202a-\u202e\u2066-\u2069"  # bidirectional overrides and isolates
    "\ud800-\udfff"  # lone surrogates: not encodable, so not printable
)
_UNSAFE: Final = re.compile(f"[{_ALWAYS}]")
_UNSAFE_IN_LINE: Final = re.compile(f"[{_ALWAYS}\t\n]")
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


def json_visible(text: str) -> str:
    """JSON text with every unsafe character inside it as a ``\\uXXXX`` escape.

    The result is still JSON and decodes to the same value: the unsafe characters
    can only stand inside strings, where a ``\\u`` escape means the same code unit
    (a lone surrogate included).
    """
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
