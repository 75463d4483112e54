"""The stored topics that are not event types: the header, snapshots, tombstones.

In a module of their own, free of the vocabulary and its payload models, so the
mapper and the recorders can tell these rows apart without importing the event
classes: a process that only reads the views (``agentlog ls``) never loads them
(docs/performance.md). The vocabulary reserves these names
(:data:`~agentlog.domain.vocabulary.RESERVED_TYPES`).
"""

from __future__ import annotations

from typing import Final

HEADER_TOPIC: Final = "session"
"""The header's row (version 1 of every session)."""
SNAPSHOT_TOPIC: Final = "session-snapshot"
"""A snapshot's row."""
ERASED_TOPIC: Final = "session-erased"
"""An erased session's tombstone (docs/erasure.md)."""
