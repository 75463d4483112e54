"""Snapshot placeholders such as ``{{cwd}}`` in logs, and their substitution.

The harness's test snapshots redact machine-specific strings as ``{{name}}``. Importing
such a log substitutes what the caller knows and reports what is left, so a literal
``{{cwd}}`` never passes for a real path unnoticed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agentlog.domain.errors import LogImportError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentlog.domain.json import Json

_PLACEHOLDER: Final = re.compile(r"\{\{([A-Za-z0-9_.-]+)\}\}")


def placeholder_name(value: object) -> str | None:
    """The name of a value that is one whole placeholder (``{{sessionId}}``)."""
    if not isinstance(value, str):
        return None
    match = _PLACEHOLDER.fullmatch(value)
    return None if match is None else match[1]


def check_substitutions(substitutions: object) -> dict[str, str]:
    """Validate the caller's substitutions; ``cwd`` must be an absolute path.

    Keys are bare names (``"cwd"``, not ``"{{cwd}}"``).
    """
    if substitutions is None:
        return {}
    if not isinstance(substitutions, Mapping):
        msg = "substitutions must map placeholder names to strings"
        raise LogImportError(msg)
    checked = dict(substitutions)
    for name, text in checked.items():
        if not isinstance(name, str) or not isinstance(text, str):
            msg = f"substitution for {{{{{name}}}}} must be a string, got {text!r}"
            raise LogImportError(msg)
    cwd = checked.get("cwd")
    if cwd is not None and not os.path.isabs(cwd):
        msg = f'substitution for {{{{cwd}}}} must be an absolute path, got "{cwd}"'
        raise LogImportError(msg)
    return checked


def apply_substitutions(value: Json, substitutions: Mapping[str, str]) -> Json:
    """Replace ``{{name}}`` placeholders inside every string of ``value``, in place.

    The harness's test snapshots redact machine-specific strings (``{{cwd}}``,
    ``{{sessionId}}``, ...). Keys of ``substitutions`` are the bare names. Returns the
    (possibly new) top-level value; containers are updated in place, iteratively, so
    any nesting depth works.
    """
    if not substitutions:
        return value

    def substitute(text: str) -> str:
        return _PLACEHOLDER.sub(
            lambda match: substitutions.get(match[1], match[0]), text
        )

    if isinstance(value, str):
        return substitute(value)
    for container, key, item in _walk(value):
        if isinstance(item, str) and "{{" in item:
            container[key] = substitute(item)
    return value


def find_placeholders(value: Json) -> dict[str, int]:
    """Count the ``{{name}}`` placeholders left in the strings of ``value``."""
    counts: dict[str, int] = {}
    strings = [value] if isinstance(value, str) else []
    strings += [item for _, _, item in _walk(value) if isinstance(item, str)]
    for text in strings:
        for match in _PLACEHOLDER.finditer(text):
            counts[match[0]] = counts.get(match[0], 0) + 1
    return counts


def _walk(value: Json) -> Iterator[tuple[Any, Any, Json]]:
    """Yield ``(container, key, item)`` for every item of nested dicts and lists."""
    stack = [value]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            entries: Iterator[tuple[Any, Json]] = iter(list(container.items()))
        elif isinstance(container, list):
            entries = enumerate(container)
        else:
            continue
        for key, item in entries:
            yield container, key, item
            if isinstance(item, (dict, list)):
                stack.append(item)
