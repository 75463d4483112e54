"""An in-memory store that several ``Sessions`` share, as a database is shared.

The in-memory backend keeps its rows in the recorder, so each application has
its own store. A test of two applications on one store names this factory as
its ``PERSISTENCE_MODULE`` (the library's hook for a factory of one's own) and
a store name: every application built with that name gets the recorders
registered under it, through its own factory, and nothing is rewired after
construction. Each application holds its own handle on those rows, as each
holds its own connection to a database: closing one application closes its
handle only, so the others (and applications built later) go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from agentlog.infrastructure.backends.memory.factory import AgentlogPOPOFactory

if TYPE_CHECKING:
    from eventsourcing.persistence import AggregateRecorder, ApplicationRecorder

    from agentlog.application import Sessions

SHARED_MEMORY_STORE = "SHARED_MEMORY_STORE"
"""The environment key naming the shared store."""


class SharedMemoryFactory(AgentlogPOPOFactory):
    """The in-memory factory, its recorders those of a registered application."""

    stores: ClassVar[dict[str, Sessions]] = {}

    def owner(self) -> Sessions:
        return self.stores[self.env.get(SHARED_MEMORY_STORE) or ""]

    def application_recorder(self) -> ApplicationRecorder:
        return self.share(self.owner().recorder)

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        snapshots = self.owner().snapshots
        if purpose == "snapshots" and snapshots is not None:
            return self.share(snapshots.recorder)
        return super().aggregate_recorder(purpose)


TOPIC = f"{__name__}:{SharedMemoryFactory.__name__}"


def sharing(app: Sessions, name: str) -> dict[str, str]:
    """The environment of an application on ``app``'s in-memory store."""
    SharedMemoryFactory.stores[name] = app
    return {"PERSISTENCE_MODULE": TOPIC, SHARED_MEMORY_STORE: name}


def forget(name: str) -> None:
    """Drop the registration (the store goes with its applications)."""
    SharedMemoryFactory.stores.pop(name, None)
