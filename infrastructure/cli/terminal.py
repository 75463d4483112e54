"""What may reach a terminal: data shown as visible escapes, secrets masked.

Session data and ids are opaque strings: an ``ESC [2J`` in a tool result or an OSC
title sequence in an id would otherwise drive the user's terminal, and a lone
surrogate (an id typed as ``$'\\xff'``) cannot be encoded at all. :func:`printable`
(whose rule lives in :mod:`agentlog.domain.visible`, shared with the model tools)
is the one function every human output goes through; the console of
:mod:`~agentlog.infrastructure.cli.program` applies it once more to every segment it
writes, so a path that forgot it still cannot emit a raw control character.
"""

from __future__ import annotations

import re
from typing import Final

from agentlog.domain.visible import printable
from agentlog.infrastructure.store_url import mask_url

__all__ = ["mask_secrets", "printable"]

_URL: Final = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"]+")
_HELP_EXAMPLE: Final = "//user:password@"
"""The URL form the help and errors show as an example; it holds no secret."""
_PASSWORD_SETTING: Final = re.compile(r"(?i)\b(password\s*=\s*)('[^']*'|\S+)")


def mask_secrets(text: str) -> str:
    """Every URL's password (``user:***@``) and ``password=`` setting masked."""
    text = _URL.sub(_masked_url, text)
    return _PASSWORD_SETTING.sub(r"\1***", text)


def _masked_url(match: re.Match[str]) -> str:
    url = match.group()
    return url if _HELP_EXAMPLE in url else mask_url(url)
