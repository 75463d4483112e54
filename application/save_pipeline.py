"""The one override of ``Application.save``: a session's events collected directly.

The library's ``save`` collects each object's events behind two runtime-checkable
protocol checks (``DomainEventProtocol``, then ``CollectEventsProtocol``). CPython
3.11 rebuilds a protocol's member list on every such ``isinstance``: ~150,000
instructions a flush, 6% of writing a session with a flush per step
(docs/performance.md#before-and-after-the-split-in-one-run). A ``Session`` is an
aggregate by its class, so its events are collected without them; the rest of the
pipeline is the library's (record, then notify). Anything else, or an application
configured for the library's own snapshots or aggregate cache, goes the library's
way, and so does a ``Leader`` of the library's process systems, whose
followers are prompted from the library's save.
``tests/infrastructure/test_eventsourcing_seam.py`` pins the pipeline this
reproduces.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agentlog.application.configuration import ConfiguredApplication
from agentlog.domain.session import Session

if TYPE_CHECKING:
    from eventsourcing.domain import DomainEventProtocol, MutableOrImmutableAggregate
    from eventsourcing.persistence import Recording


class SavePipeline(ConfiguredApplication):
    """``Sessions``' ``save``: record and notify, collecting a session's events."""

    def save(
        self,
        *objs: MutableOrImmutableAggregate[str] | DomainEventProtocol[str] | None,
        **kwargs: Any,
    ) -> list[Recording[str]]:
        """``Application.save`` for one ``Session``: its pending events are
        collected (removed from it), recorded with ``kwargs`` in one transaction,
        and passed to :meth:`notify`; a failed record leaves them collected, as
        the library's does."""
        aggregate = objs[0] if len(objs) == 1 else None
        if (
            not isinstance(aggregate, Session)
            or self.snapshotting_intervals
            or self.repository.cache is not None
            or _is_leader(self)
        ):
            return super().save(*objs, **kwargs)
        events: list[DomainEventProtocol[str]] = list(aggregate.collect_events())
        recordings = self.events.put(events, **kwargs)
        self.notify(events)
        return recordings


def _is_leader(app: object) -> bool:
    """Whether ``app`` is a ``Leader`` of the library's process systems. The
    module is looked up, not imported: an application can only be a ``Leader``
    once ``eventsourcing.system`` is loaded, and importing it costs ~12 ms."""
    system = sys.modules.get("eventsourcing.system")
    return system is not None and isinstance(app, system.Leader)
