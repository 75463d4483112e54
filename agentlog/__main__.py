"""The ``agentlog`` console script and ``python -m agentlog``: stoppable from the start.

Importing the command line takes tens of milliseconds (click, pydantic,
eventsourcing, the views). A SIGINT or SIGTERM landing then would be Python's
``KeyboardInterrupt`` traceback, or a silent death by SIGTERM. So this module
imports nothing but ``signal`` and ``sys`` before it catches both signals: from
its first line on, a stop is the command line's one line (``interrupted by
SIGINT``) and exit 130, as a stop later in a command is (see
:mod:`agentlog.infrastructure.cli.interrupt`, which takes over once imported).
A signal that lands before this runs (while the interpreter itself starts) gets
Python's default behaviour; no program code can run earlier.
"""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130
"""The command line's exit status for a stop signal (128 + SIGINT)."""
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _StoppedWhileStarting(KeyboardInterrupt):
    """A stop signal arrived before the command line's own handlers were in place."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signal_name = signal.Signals(signum).name


_arrived: list[_StoppedWhileStarting] = []
"""The stops that arrived while starting, kept in case an import swallowed one."""


def _raise_stopped(signum: int, frame: object) -> None:
    stop = _StoppedWhileStarting(signum)
    _arrived.append(stop)
    sys.unraisablehook = _quiet_swallowed_stop
    raise stop


def _quiet_swallowed_stop(unraisable: sys.UnraisableHookArgs) -> None:
    """A stop raised inside a finalizer or weakref callback (an import's module
    lock has one) is swallowed there, and Python would print it: it is in
    ``_arrived``, which :func:`main` checks once the imports are done."""
    if not isinstance(unraisable.exc_value, _StoppedWhileStarting):
        sys.__unraisablehook__(unraisable)


def _exit_stopped(signal_name: str) -> None:
    """Print the one line and exit 130; a second signal no longer interrupts that."""
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if sys.stderr is not None:  # started with stderr closed
        try:
            sys.stderr.write(f"interrupted by {signal_name}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    sys.exit(EXIT_INTERRUPTED)


def main() -> None:
    """Catch the stop signals, then import and run the command line."""
    try:
        # Inside the try: a signal landing right after the first handler is set
        # raises here, not above it.
        for signum in _STOP_SIGNALS:
            # Ignored at start (nohup, a background job) stays ignored.
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, _raise_stopped)
        from agentlog.infrastructure.cli import main as run

        if _arrived:  # an import caught the KeyboardInterrupt and carried on
            _exit_stopped(_arrived[0].signal_name)
        run()
    except KeyboardInterrupt as stop:
        # Ours while starting, or the command line's own Interrupted if one
        # escaped its handling (both carry the signal's name).
        _exit_stopped(getattr(stop, "signal_name", "SIGINT"))
    except Exception:
        if _arrived:  # an import swallowed the stop, then failed for it
            _exit_stopped(_arrived[0].signal_name)
        raise


if __name__ == "__main__":
    main()
