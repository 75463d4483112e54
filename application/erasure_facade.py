"""The erasure façade of ``Sessions``: erase, the audit, retention.

The work is :class:`~agentlog.application.erasure.SessionEraser`'s
(docs/erasure.md); these are the application's entry points, with store errors
typed, and what an erase means for this process's live handles and caches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.application.configuration import ConfiguredApplication
from agentlog.application.store_errors import store_errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.erasure import Erasure, RetentionReport, SessionEraser
    from agentlog.application.history import MessageHistory
    from agentlog.application.live import LiveSessions


class ErasureFacade(ConfiguredApplication):
    """Erasing stored sessions (``Sessions`` sets the collaborators below)."""

    eraser: SessionEraser
    live: LiveSessions
    history: MessageHistory

    def erase(
        self, session_id: str, *, reason: str, descendants: bool = False
    ) -> list[Erasure]:
        """Erase a stored session everywhere, in one transaction.

        See docs/erasure.md. Its events, snapshots and every view row about it
        go; a content-free tombstone (id, time, ``reason``) stays for the audit
        (:meth:`erasures`). Afterwards every read says the session does not
        exist. ``descendants`` erases its stored forks too, in the same
        transaction. A missing or erased id raises
        :class:`SessionNotFoundError`.
        """
        self.check_writable()
        with store_errors():
            return self.eraser.erase(session_id, reason=reason, descendants=descendants)

    def erasures(self) -> list[Erasure]:
        """The audit: every erasure in the store (id, time, reason), oldest first."""
        with store_errors():
            return self.eraser.erasures()

    def erase_older_than(
        self,
        cutoff: int,
        *,
        reason: str,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        vacuum_full: bool = False,
    ) -> RetentionReport:
        """Erase every session whose last event is older than ``cutoff`` (epoch ms).

        See docs/erasure.md#retention. A session appended to while this runs is
        kept; ``vacuum_full`` rewrites a PostgreSQL store's tables afterwards.
        """
        if not dry_run:
            self.check_writable()
        with store_errors():
            return self.eraser.erase_older_than(
                cutoff,
                reason=reason,
                dry_run=dry_run,
                progress=progress,
                vacuum_full=vacuum_full,
            )

    def drop_erased(self, session_id: str) -> None:
        """Forget an erased session in this process: its handle and caches."""
        handle = self.live.drop(session_id)
        if handle is not None:
            handle.closed = True
            handle.stale = True
        self.history.forget(session_id)
