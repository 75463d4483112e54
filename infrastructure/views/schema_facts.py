"""One read of a store's schema for every table check of an opening.

Opening a store checks, recorder by recorder, that its tables exist before
deciding to create nothing (``backends.sqlite.tables``, ``PostgresView``): the
events, the snapshots and the three views each read the catalog in a
transaction of their own, five reads where one answers them all (W3,
docs/performance.md). So the first check reads the catalog once and every
later check on the same datastore answers from that read.

Only a "ready" answer is taken from it. What the store's tables are never
goes backwards while it is open (tables and indexes are created, not dropped,
apart from the plaintext views a store turning encryption on drops, and a
view already open would not see that either), so a name read once still
exists. A check that finds something missing forgets the read and runs its
own checks and creation as before, under the write lock where it writes.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(frozen=True, slots=True)
class SchemaFacts:
    """What one read of the catalog found."""

    names: frozenset[str]
    """The lowercase names of the schema's tables and indexes."""
    migration: int | None
    """The library's tracking migration row (``__migration__``), if any."""
    erasures_pending: bool | None = None
    """Whether an erase left work pending (``None``: not read by this backend)."""


_FACTS: weakref.WeakKeyDictionary[Any, SchemaFacts] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def known_facts(datastore: Any, read: Callable[[], SchemaFacts]) -> SchemaFacts:
    """The facts of ``datastore`` read earlier, else ``read()`` (and kept)."""
    with _LOCK:
        found = _FACTS.get(datastore)
    if found is None:
        found = remember_facts(datastore, read())
    return found


def remember_facts(datastore: Any, facts: SchemaFacts) -> SchemaFacts:
    """Keep ``facts`` (just read) for the later checks of ``datastore``."""
    with _LOCK:
        _FACTS[datastore] = facts
    return facts


def forget_facts(datastore: Any) -> None:
    """Something was missing: the next check reads the catalog again."""
    with _LOCK:
        _FACTS.pop(datastore, None)
