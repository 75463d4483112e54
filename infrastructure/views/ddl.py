"""What a view's creation statements name, so opening a view can check its
tables instead of running DDL (``backends.sqlite.tables``,
``PostgresView.create_table``).

A view's statements are ``CREATE TABLE|INDEX IF NOT EXISTS``, ``DROP TABLE IF
EXISTS`` (tables of older layouts) and cleanups that belong with those drops.
The views are complete when every name created exists and every name dropped is
gone; then none of the statements would change anything, and none is run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

_NAME = r'((?:"[^"]+"|\w+)(?:\.(?:"[^"]+"|\w+))?)'
_CREATED = re.compile(
    r"\s*CREATE\s+(?:UNIQUE\s+)?(?:VIRTUAL\s+)?(?:TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+"
    + _NAME,
    re.IGNORECASE,
)
_DROPPED = re.compile(r"\s*DROP\s+(?:TABLE|INDEX)\s+IF\s+EXISTS\s+" + _NAME, re.I)
_CLEANUP = re.compile(r"\s*DELETE\s+FROM\s", re.IGNORECASE)


def _unqualified(name: str) -> str:
    """The object's own name (no schema), unquoted, lowercase."""
    return name.rsplit(".", 1)[-1].strip('"').lower()


def schema_names(statements: Iterable[str]) -> tuple[set[str], set[str]] | None:
    """The names the statements create and drop, or ``None`` if one of them is
    none of the three kinds (it cannot be checked, so it must run)."""
    created: set[str] = set()
    dropped: set[str] = set()
    for statement in statements:
        if match := _CREATED.match(statement):
            created.add(_unqualified(match.group(1)))
        elif match := _DROPPED.match(statement):
            dropped.add(_unqualified(match.group(1)))
        elif not _CLEANUP.match(statement):
            return None
    return created, dropped


def schema_ready(existing: Collection[str], statements: Iterable[str]) -> bool:
    """True if running the statements would change nothing (``existing``: the
    lowercase names of the schema's tables and indexes)."""
    names = schema_names(statements)
    if names is None:
        return False
    created, dropped = names
    return created <= set(existing) and not dropped & set(existing)
