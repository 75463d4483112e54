"""The session header's rules, in one place: its shape, its version, their messages.

Every reader of a header — the store's load, the store reader, the JSONL importers —
asks these functions, so a header is valid or refused the same way, with the same
words, wherever it is read (docs/persistence.md#jsonl-format).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agentlog.domain.errors import CorruptSessionLogError, UnsupportedSessionFormatError
from agentlog.domain.json import js_number

Header = Mapping[str, Any]
"""A session header as read: its JSON keys to their values."""

SESSION_FORMAT_VERSION: Final = 0
"""The only header version this build reads or writes (pre-release format)."""

MAX_SAFE_INTEGER: Final = 2**53 - 1

HEADER_NOT_JSON: Final = "corrupt session log: header line is not valid JSON"
NOT_A_HEADER: Final = "corrupt session log: first line is not a session header"

HEADER_KEYS: Final = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "delegationDepth",
    "owner",
    "origin",
)
"""The keys a stored header may hold, in the order the header line writes them."""

OWNER_RULE: Final = (
    "session owner must be a non-empty string without NUL or lone surrogates"
)
ORIGIN_RULE: Final = (
    "session origin must be a non-empty string without NUL or lone surrogates"
)


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def is_storable_text(text: str) -> bool:
    """Text every backend can key rows by: no NUL (PostgreSQL ``text`` cannot hold
    it) and no lone surrogate (SQLite's driver cannot encode one)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_owner(value: object) -> bool:
    """An ``owner`` is a non-empty string of storable text (docs/events.md#header)."""
    return type(value) is str and bool(value) and is_storable_text(value)


def is_origin(value: object) -> bool:
    """An ``origin`` (why a child exists: ``"subagent"``) is non-empty storable text."""
    return type(value) is str and bool(value) and is_storable_text(value)


def is_depth(value: object) -> bool:
    """A ``delegationDepth`` is a non-negative safe integer."""
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def check_header_shape(
    value: object,
    *,
    source: str,
    require_version: bool = True,
    require_depth: bool = False,
) -> dict[str, Any]:
    """Check a parsed header line's shape; return it without ``type``.

    A header is an object with ``type:"session"``, a numeric ``version`` (optional
    only for the original harness's later logs, ``require_version=False``), a string
    ``id`` and a numeric ``createdAt``; a ``delegationDepth`` present must be a
    non-negative safe integer, an ``owner`` present must pass :func:`is_owner`.
    Extra keys are kept. ``source`` names the input in
    the error, since the header's own id is not trusted yet.
    """
    if not isinstance(value, dict) or value.get("type") != "session":
        raise CorruptSessionLogError(NOT_A_HEADER, session_id=source, seq=None)
    problem = _header_problem(value, require_version, require_depth)
    if problem is not None:
        msg = f"{NOT_A_HEADER}: {problem}"
        raise CorruptSessionLogError(msg, session_id=source, seq=None)
    return {key: item for key, item in value.items() if key != "type"}


_RULES: Final = (
    ("id", lambda value: type(value) is str, "a string"),
    ("createdAt", _is_number, "a number"),
    ("version", _is_number, "a number"),
    ("delegationDepth", is_depth, "a non-negative safe integer"),
    ("owner", is_owner, "a non-empty string without NUL or lone surrogates"),
    ("origin", is_origin, "a non-empty string without NUL or lone surrogates"),
)
"""Each header key's rule, in the order a refusal names the first one broken."""


def _header_problem(
    value: dict[str, Any], require_version: bool, require_depth: bool
) -> str | None:
    """The first key a header misses or breaks, said so a user can fix the line."""
    required = {"id", "createdAt"}
    if require_version:
        required.add("version")
    if require_depth:
        required.add("delegationDepth")
    for key, holds, kind in _RULES:
        if key not in value:
            if key in required:
                return f'"{key}" is missing'
            continue
        if not holds(value[key]):
            return f'"{key}" must be {kind}'
    return None


def check_format_version(session_id: str, header: Mapping[str, Any]) -> None:
    """Refuse a header of another format version.

    See docs/persistence.md#format-versions-and-legacy-shapes. Only the integer 0
    is this format; ``0.0``, ``"0"`` or ``true`` are not.
    """
    version = header.get("version")
    if type(version) is not int or version != SESSION_FORMAT_VERSION:
        msg = (
            f"unsupported session format version {js_number(version)}"
            f' for "{session_id}" (only v{SESSION_FORMAT_VERSION} is supported)'
        )
        raise UnsupportedSessionFormatError(msg)
