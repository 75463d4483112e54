"""SIGINT and SIGTERM: stop where the command is, flush nothing, say what is stored.

Both signals raise :class:`Interrupted` (a ``KeyboardInterrupt``, so a database
driver cancels its running statement as it does for Ctrl-C, and every transaction
in flight rolls back). The command's store is then closed without a flush, and a
fresh connection answers what was committed before the signal: the one line the
user reads names those sessions, and the exit status is
:data:`EXIT_INTERRUPTED`.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from types import FrameType

log = logging.getLogger(__name__)

EXIT_INTERRUPTED: Final = 130
"""The status a shell gives a command stopped by Ctrl-C (128 + SIGINT)."""
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; nothing after it may write."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.signal_name = signal.Signals(signum).name


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    # The signal may land between a library context manager's setup and its
    # block (a pooled connection checked out, never checked in): its cleanup then
    # runs at garbage collection, after the store is closed, and Python would
    # print "Exception ignored in ..." after the one line. Once stopped, such
    # errors are logged, not printed.
    sys.unraisablehook = _log_unraisable
    raise Interrupted(signum)


def _log_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    log.debug(
        "after a stop signal, ignored in %r: %r",
        unraisable.object,
        unraisable.exc_value,
    )


def install_stop_handlers() -> None:
    """Make SIGINT and SIGTERM raise :class:`Interrupted` in the main thread.

    A signal ignored when the program started stays ignored, as Python does for
    SIGINT (``nohup``, a background job of a non-interactive shell).
    """
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise_interrupted)


def ignore_stop_signals() -> None:
    """Ignore SIGINT and SIGTERM while the finished program exits.

    Python resets its handlers while shutting down, so a signal landing then would
    kill a command that already succeeded (exit -15 after its output).
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def stopped_line(stop: Interrupted) -> str:
    """The one line a stopped command that writes nothing prints."""
    return f"interrupted by {stop.signal_name}"


def stopped_write_line(stop: Interrupted, stored: list[str] | None) -> str:
    """The one line a stopped write prints: what the store holds now.

    ``stored`` is None when the check itself could not finish (a second signal,
    or the store went away).
    """
    if stored is None:
        return f"{stopped_line(stop)}; could not check what was stored"
    if not stored:
        return f"{stopped_line(stop)}; nothing was stored"
    return f"{stopped_line(stop)}; stored: {', '.join(stored)}"
