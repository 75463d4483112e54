"""The derived message history of a session, read surface-first and cached.

Only the events on the current surface are fetched and decoded (a long session holds
five or more log-only rows per message). Messages of stored events are cached per
seq, because a stored event never changes; unflushed events are derived on every
call, because a lost conflict or a discarded command can drop them. Every call
returns messages equal to a fold from scratch (docs/surface.md#derived-messages):
fresh copies, or for an in-library reader that copies what it hands out (the OpenAI
Agents session), the cached messages themselves.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from agentlog.application.gc_pause import gc_paused
from agentlog.domain.events import SessionEvent
from agentlog.domain.json import copy_json
from agentlog.domain.messages import derive_message

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from eventsourcing.persistence import ApplicationRecorder, StoredEvent

    from agentlog.domain.json import Envelope
    from agentlog.domain.session import Session

CACHED_SESSIONS = 16
RANGE_GAP = 64
"""Without an exact read, node seqs closer than this are fetched in one range read
(the rows between are skipped without decoding)."""

Message = dict[str, Any]


class MessageHistory:
    """Derives messages of sessions from a recorder, with a per-seq cache."""

    def __init__(
        self,
        recorder: ApplicationRecorder,
        decode: Callable[[StoredEvent], Envelope],
    ) -> None:
        self.recorder = recorder
        self.decode = decode
        self._cache: OrderedDict[str, dict[int, Message | None]] = OrderedDict()

    def forget(self, session_id: str) -> None:
        """Drop the session's cached messages (an erased session)."""
        self._cache.pop(session_id, None)

    def messages(
        self,
        aggregate: Session,
        *,
        last: int | None = None,
        shared: bool = False,
        stored: Mapping[int, Envelope] | None = None,
    ) -> list[Message]:
        """The messages of the aggregate's surface, or its ``last`` N (``shared``,
        ``stored``: see :meth:`of_nodes`)."""
        pending = {
            event.seq: event.envelope
            for event in aggregate.pending_events
            if isinstance(event, SessionEvent)
        }
        return self.of_nodes(
            aggregate.id,
            aggregate.surface.seqs,
            pending,
            last=last,
            shared=shared,
            stored=stored,
        )

    def of_nodes(
        self,
        session_id: str,
        nodes: list[int],
        pending: dict[int, Envelope],
        *,
        last: int | None = None,
        shared: bool = False,
        stored: Mapping[int, Envelope] | None = None,
    ) -> list[Message]:
        """The messages of these surface nodes (``pending``: unflushed events by
        seq), or their ``last`` N; an as-of read passes an earlier surface.

        ``shared`` returns the cached messages themselves, not copies: for an
        in-library reader that copies only what it hands out, and never mutates.
        ``stored``: stored events by seq that the caller has just decoded and
        owns (the tail a load read), taken instead of reading them again.
        """
        cache = self._cache.pop(session_id, None) or {}
        self._cache[session_id] = cache
        while len(self._cache) > CACHED_SESSIONS:
            self._cache.popitem(last=False)
        if last is None:
            return self._derive(session_id, nodes, pending, cache, shared, stored)
        found: list[Message] = []
        end = len(nodes)
        window = max(last, 1)
        while end > 0 and len(found) < last:
            begin = max(0, end - window)
            found[:0] = self._derive(
                session_id, nodes[begin:end], pending, cache, shared, stored
            )
            end = begin
            window *= 2
        return found[-last:] if last else []

    def _derive(
        self,
        session_id: str,
        nodes: list[int],
        pending: dict[int, Envelope],
        cache: dict[int, Message | None],
        shared: bool,
        stored: Mapping[int, Envelope] | None = None,
    ) -> list[Message]:
        """Messages of these surface nodes, reading only uncached events (fresh
        copies unless ``shared``)."""
        missing = [s for s in nodes if s not in pending and s not in cache]
        if stored and missing:
            for seq in missing:
                envelope = stored.get(seq)
                if envelope is not None:
                    # Decoded for the caller alone: no copy needed.
                    cache[seq] = derive_message(envelope, copy=False)
            missing = [s for s in missing if s not in cache]
        with gc_paused():
            for row in self.rows_at(session_id, sorted(missing)) if missing else ():
                # Freshly decoded and owned here: no copy needed.
                cache[row.originator_version - 2] = derive_message(
                    self.decode(row), copy=False
                )
            messages = []
            for seq in nodes:
                envelope = pending.get(seq)
                if envelope is not None:
                    message = derive_message(envelope)
                else:
                    message = cache[seq]
                    if message is not None and not shared:
                        message = copy_json(message)
                if message is not None:
                    messages.append(message)
        return messages

    def rows_at(self, session_id: str, seqs: list[int]) -> list[StoredEvent]:
        """The stored rows at exactly these (sorted) seqs.

        Uses the recorder's ``select_events_at`` where the store offers it (see
        :mod:`agentlog.infrastructure.recorders`); otherwise reads ranges and skips the
        rows between without decoding them.
        """
        select_at = getattr(self.recorder, "select_events_at", None)
        if select_at is not None:
            rows: list[StoredEvent] = select_at(session_id, [s + 2 for s in seqs])
            return rows
        wanted = set(seqs)
        return [
            row
            for first, last in _runs(seqs)
            for row in self.recorder.select_events(
                session_id, gt=first + 1, lte=last + 2
            )
            if row.originator_version - 2 in wanted
        ]


def _runs(seqs: list[int]) -> Iterator[tuple[int, int]]:
    """Group sorted seqs into ranges whose gaps are smaller than ``RANGE_GAP``."""
    if not seqs:
        return
    first = last = seqs[0]
    for seq in seqs[1:]:
        if seq - last > RANGE_GAP:
            yield first, last
            first = seq
        last = seq
    yield first, last
