"""agentlog through its public API only (``from agentlog import ...``), on the SQLite recorder.

``application`` is imported lazily: the core may not exist yet, and then the
runner reports agentlog as unavailable instead of failing.
"""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from .base import (
    BATCH_GROUPS,
    CWD,
    BenchSystem,
    Flush,
    SessionRef,
    tail_messages,
)
from .workload import TAIL_MESSAGES

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

    from .workload import Conversation, Group, Intent


def _application() -> ModuleType:
    return importlib.import_module("application")


def _append(handle: Any, intent: Intent) -> None:
    """Pass the surface markers only where the type takes them."""
    if intent.surface_op is None:
        handle.append(intent.type, intent.data)
    else:
        handle.append(
            intent.type,
            intent.data,
            surface_op=intent.surface_op,
            source_event_seqs=intent.source_event_seqs,
        )


class AgentlogSystem(BenchSystem):
    """Sessions + SessionQuery with full validation and invariants on (defaults)."""

    name: ClassVar[str] = "agentlog"
    label: ClassVar[str] = "agentlog"
    features: ClassVar[frozenset[str]] = frozenset(
        {"w1", "w2a", "w2b", "w3", "w4", "w5", "w6"}
    )
    _app: Any = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """The core lands separately; without it there is nothing to measure."""
        try:
            module = _application()
        except Exception as error:
            return f"import application failed: {type(error).__name__}: {error}"
        missing = [n for n in ("Sessions", "SessionQuery") if not hasattr(module, n)]
        if missing:
            return f"application lacks {', '.join(missing)}"
        return None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """Our dependencies' versions."""
        from importlib.metadata import version

        return {name: version(name) for name in ("eventsourcing", "pydantic")}

    @classmethod
    def preload(cls) -> None:
        """Import what a service imports at start-up, outside the timers.

        ``Sessions`` resolves its mapper, recorder and persistence module by topic
        on construction; a long-running service has them imported already.
        """
        application = _application()
        # The package resolves its names on first use (PEP 562): resolve them here.
        for name in ("Sessions", "SessionQuery"):
            getattr(application, name)
        agentlog = importlib.import_module("agentlog")
        if hasattr(agentlog, "open_query"):
            importlib.import_module("agentlog.application.query_store")
            importlib.import_module("agentlog.application.query_models")
            importlib.import_module(
                "agentlog.infrastructure.backends.sqlite.listing_shortcut"
            )
        for module in (
            "agentlog.infrastructure.store_setup",
            "agentlog.infrastructure.backends.sqlite.factory",
            "agentlog.infrastructure.mapper",
            "agentlog.infrastructure.backends.sqlite.recorders",
            "eventsourcing.sqlite",
            "agentlog.application.query",
            "agentlog.infrastructure.backends.sqlite.views",
        ):
            importlib.import_module(module)

    def _sessions(self) -> Any:
        if self._app is None:
            self._app = _application().Sessions(
                env={
                    "PERSISTENCE_MODULE": "eventsourcing.sqlite",
                    "SQLITE_DBNAME": str(self.db_path),
                }
            )
        return self._app

    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """Append through a live handle; ``flush`` is the durability checkpoint."""
        app = self._sessions()
        handle = app.create_session(cwd=CWD, session_id=conversation.session_id)
        groups = conversation.groups
        for k, group in enumerate(groups):
            for intent in group:
                _append(handle, intent)
                if flush == "event":
                    app.flush(handle)
            if flush == "step" or (
                flush == "batch"
                and ((k + 1) % BATCH_GROUPS == 0 or k + 1 == len(groups))
            ):
                app.flush(handle)
        app.close(handle)
        return {}

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """The derived history."""
        return list(self._sessions().messages(ref.session_id))

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """``messages(id, last=50)`` when offered, else a seq window of events.

        The fallback maps the window locally (the tail holds appends only) and
        needs the caller to know where the tail starts.
        """
        app = self._sessions()
        if "last" in inspect.signature(app.messages).parameters:
            return list(app.messages(ref.session_id, last=TAIL_MESSAGES))
        events = app.read_events(ref.session_id, after=ref.tail_after)
        return tail_messages(events)

    def list_page(self, limit: int = 50) -> Sequence[Any]:
        """The titled listing view's first page, as a service that only reads
        opens it: ``agentlog.open_query`` (docs/query.md#query-only-opening),
        or ``SessionQuery(Sessions(...))`` at a checkout without it."""
        if self._app is None:
            open_query = getattr(
                importlib.import_module("agentlog"), "open_query", None
            )
            if open_query is not None:
                with open_query(f"sqlite:///{self.db_path}") as query:
                    page = query.list_summaries(limit=limit)
                return list(page.items)
        query = _application().SessionQuery(self._sessions())
        page = query.list_summaries(limit=limit)
        return list(getattr(page, "items", page))

    def fork_read(self, ref: SessionRef, child_id: str) -> Sequence[Any]:
        """Fork at the boundary, make the child durable, read its history."""
        app = self._sessions()
        child = app.fork(
            ref.session_id, boundary=ref.fork_boundary, child_session_id=child_id
        )
        app.flush(child)
        return list(app.messages(child.id))

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """Take the stored session over, append one step, flush."""
        app = self._sessions()
        handle = app.get_session(ref.session_id)
        for intent in group:
            _append(handle, intent)
        app.flush(handle)
        app.close(handle)

    def close(self) -> None:
        """``close()`` without a handle flushes everything and shuts down."""
        if self._app is not None:
            self._app.close()
            self._app = None


System = AgentlogSystem
