"""Out-of-band appends: a log-only event from outside the agent loop.

See docs/titles.md#producers. Inside an open turn the event rides that turn's
checkpoint. Otherwise it is wrapped in a zero-step turn
(``trigger: {kind: "session-title"}``), closed even when the inner append fails,
and flushed at once. One at a time per session.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import SessionError

if TYPE_CHECKING:
    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope


class OutOfBandAppends:
    """The out-of-band appends of one ``Sessions`` (``append_out_of_band``)."""

    def __init__(self, app: Sessions) -> None:
        self.app = app
        self._mutex = threading.Lock()
        self._busy: set[str] = set()

    def append(self, handle: SessionHandle, event_type: str, data: Any) -> Envelope:
        """Append ``event_type`` to ``handle`` out of band (see the module)."""
        with self._mutex:
            if handle.id in self._busy:
                msg = (
                    f'session "{handle.id}" already has an out-of-band append in '
                    "progress"
                )
                raise SessionError(msg)
            self._busy.add(handle.id)
        try:
            aggregate = handle.aggregate
            if aggregate.turns.open_turn is not None:
                return handle.append(event_type, data)
            turn = aggregate.turns.next_turn
            handle.append(
                "turn/start", {"turn": turn, "trigger": {"kind": "session-title"}}
            )
            try:
                return handle.append(event_type, data)
            finally:
                handle.append(
                    "turn/end", {"turn": turn, "reason": {"kind": "completed"}}
                )
                self.app.flush(handle)
        finally:
            self._busy.discard(handle.id)
