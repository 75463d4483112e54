"""The in-memory factory ``Sessions`` uses: the library's, with our recorder.

:class:`~agentlog.infrastructure.backends.memory.recorders.POPOSessionRecorder`
adds the write guard and erasure (docs/erasure.md) to the library's in-memory
recorder, so the in-memory store behaves as SQLite and PostgreSQL do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from eventsourcing.popo import POPOFactory

from agentlog.infrastructure.backends.memory.backend import BACKEND
from agentlog.infrastructure.backends.memory.recorders import POPOSessionRecorder
from agentlog.infrastructure.views.sealing_factory import SealingFactory

if TYPE_CHECKING:
    from eventsourcing.persistence import ApplicationRecorder

    from agentlog.infrastructure.backends.backend import Backend


class AgentlogPOPOFactory(SealingFactory, POPOFactory):
    """``POPOFactory`` whose application recorder guards writes and erases."""

    backend: ClassVar[Backend] = BACKEND

    def application_recorder(self) -> ApplicationRecorder:
        return POPOSessionRecorder()
