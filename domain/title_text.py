"""Title text as pure functions: normalisation, fallback text, eligible prompts.

Apart from :mod:`~agentlog.domain.title` (the title snapshot, a pydantic model)
so the listing's projection, which folds titles into its rows, imports no model:
``agentlog ls`` loads neither pydantic nor the vocabulary (docs/performance.md).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentlog.domain.errors import TitleError

TITLE_EVENT = "session/title"
USER_MESSAGE = "user/message"


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str]]:
    """Compiled by the first title cleaned, not at import: a listing whose views
    are current cleans none (``agentlog ls``, docs/performance.md)."""
    # Normalisation step 1, applied in this order. ``\Z`` (not ``$``) is "end
    # of text".
    removed = (
        re.compile(r"(?:\x1b\]|\x9d)[\s\S]*?(?:\x07|\x1b\\|\Z)"),  # OSC
        re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"),  # CSI
        re.compile(r"\x1b[@-_]"),  # an escape pair
        re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"),  # controls
        re.compile(
            r"[\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
        ),  # invisibles
    )
    # After the controls are gone, Python's ``\s`` is JavaScript's ``\s``.
    return removed, re.compile(r"\s+")


def _clean(text: str) -> str:
    """Steps 1–2: strip terminal sequences and invisibles, collapse whitespace."""
    removed, whitespace = _patterns()
    for pattern in removed:
        text = pattern.sub("", text)
    return whitespace.sub(" ", text).strip(" ")


def _truncate(text: str, max_bytes: float) -> str:
    """Steps 3–4: cut to ``max_bytes`` UTF-8 bytes on a code-point boundary."""
    if math.isinf(max_bytes):
        return text.rstrip(" ")
    # A lone surrogate counts 3 bytes, as the U+FFFD a TextEncoder writes for it.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        end = int(max_bytes)
        while end > 0 and data[end] & 0xC0 == 0x80:
            end -= 1
        text = data[:end].decode("utf-8", "surrogatepass")
    return text.rstrip(" ")


def _check_limit(value: object, name: str) -> None:
    if type(value) is not int or value <= 0:
        msg = f"{name} must be a positive integer"
        raise TitleError(msg)


def normalize_title(text: str, max_bytes: float) -> str:
    """A display-safe title of at most ``max_bytes`` UTF-8 bytes.

    See docs/titles.md#normalisation.

    ``max_bytes`` is a positive int, or ``math.inf`` for the eligibility test.
    """
    if not (isinstance(max_bytes, float) and math.isinf(max_bytes) and max_bytes > 0):
        _check_limit(max_bytes, "maxBytes")
    return _truncate(_clean(text), max_bytes)


def fallback_title(text: str, max_words: int, max_bytes: int) -> str:
    """The first ``max_words`` words of a prompt, cleaned and byte-capped.

    See docs/titles.md#normalisation.
    """
    _check_limit(max_bytes, "maxBytes")
    _check_limit(max_words, "maxWords")
    words = _clean(text).split(" ")[:max_words]
    return _truncate(" ".join(words), max_bytes)


def message_text(event: Mapping[str, Any]) -> str:
    """The ``text`` blocks of a message event joined with newlines."""
    data = event.get("data")
    content = data.get("content") if isinstance(data, Mapping) else None
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def is_eligible_message(event: Mapping[str, Any]) -> bool:
    """A human prompt with visible text: what a title may be derived from.

    See docs/titles.md#normalisation.
    """
    if event.get("type") != USER_MESSAGE:
        return False
    data = event.get("data")
    source = data.get("source") if isinstance(data, Mapping) else None
    if not isinstance(source, Mapping) or source.get("kind") != "user":
        return False
    return bool(normalize_title(message_text(event), math.inf))


def eligible_messages(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every eligible prompt in log order (the ``all-user-messages`` input)."""
    return [event for event in events if is_eligible_message(event)]
