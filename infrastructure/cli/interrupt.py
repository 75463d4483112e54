"""SIGINT and SIGTERM: stop where the command is, flush nothing, say what is stored.

Both signals raise :class:`Interrupted` (a ``KeyboardInterrupt``, so a database
driver cancels its running statement as it does for Ctrl-C, and every transaction
in flight rolls back). The command's store is then closed without a flush, and a
fresh connection answers what was committed before the signal: the one line the
user reads names those sessions, and the exit status is
:data:`EXIT_INTERRUPTED`.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from types import FrameType

EXIT_INTERRUPTED: Final = 130
"""The status a shell gives a command stopped by Ctrl-C (128 + SIGINT)."""
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; nothing after it may write."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signal_name = signal.Signals(signum).name


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def install_stop_handlers() -> None:
    """Make SIGINT and SIGTERM raise :class:`Interrupted` in the main thread."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_interrupted)


def stopped_line(stop: Interrupted, stored: list[str] | None) -> str:
    """The one line an interrupted write prints: what the store holds now.

    ``stored`` is None when the check itself could not finish (a second signal,
    or the store went away).
    """
    if stored is None:
        return f"interrupted by {stop.signal_name}; could not check what was stored"
    if not stored:
        return f"interrupted by {stop.signal_name}; nothing was stored"
    return f"interrupted by {stop.signal_name}; stored: {', '.join(stored)}"
