"""The in-memory factory ``Sessions`` uses: the library's, with our recorder.

:class:`~agentlog.infrastructure.backends.memory.recorders.POPOSessionRecorder`
adds the write guard and erasure (docs/erasure.md) to the library's in-memory
recorder, so the in-memory store behaves as SQLite and PostgreSQL do. Closing
the factory closes every recorder it made, as closing a SQL store's pool does:
each later read or write raises the library's ``ConnectionPoolClosedError``,
which ``Sessions`` reports as ``StoreClosedError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from eventsourcing.popo import POPOFactory

from agentlog.infrastructure.backends.memory.backend import BACKEND
from agentlog.infrastructure.backends.memory.recorders import POPOSessionRecorder
from agentlog.infrastructure.eventsourcing_seam import popo_close, popo_connection
from agentlog.infrastructure.views.sealing_factory import SealingFactory

if TYPE_CHECKING:
    from eventsourcing.persistence import (
        AggregateRecorder,
        ApplicationRecorder,
        ProcessRecorder,
    )
    from eventsourcing.utils import Environment, EnvType

    from agentlog.infrastructure.backends.backend import Backend

TRecorder = TypeVar("TRecorder")


class AgentlogPOPOFactory(SealingFactory, POPOFactory):
    """``POPOFactory`` whose application recorder guards writes and erases, and
    whose ``close()`` closes what it made."""

    backend: ClassVar[Backend] = BACKEND

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        self._made: list[Any] = []

    def made(self, recorder: TRecorder) -> TRecorder:
        """``recorder``, closed with this factory."""
        self._made.append(recorder)
        return recorder

    def share(self, recorder: TRecorder) -> TRecorder:
        """A handle on another factory's ``recorder`` (its rows, as a database's),
        closed with this factory while ``recorder`` stays open."""
        return self.made(popo_connection(recorder))

    def application_recorder(self) -> ApplicationRecorder:
        return self.made(POPOSessionRecorder())

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        return self.made(super().aggregate_recorder(purpose))

    def tracking_recorder(self, tracking_recorder_class: Any = None) -> Any:
        return self.made(super().tracking_recorder(tracking_recorder_class))

    def process_recorder(self) -> ProcessRecorder:
        return self.made(super().process_recorder())

    def close(self) -> None:
        for recorder in self._made:
            popo_close(recorder)
        super().close()
