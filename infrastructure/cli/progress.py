"""A progress bar for long commands: on stderr, only on a terminal, only when slow.

Import, export and fork move whole sessions; on a large one they run for seconds or
minutes. :class:`Meter` shows a rich bar with the rate and the time left once a
command has run for about a second, so quick commands print nothing extra, and it
stays silent when stderr is not a terminal (scripts read stderr too).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING, Final, TypeVar

from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import TracebackType

    from rich.console import Console
    from rich.progress import Task

T = TypeVar("T")

SHOW_AFTER_SECONDS: Final = 1.0
"""A command quicker than this shows no bar at all."""
SHOW_AFTER_ENV_VAR: Final = "AGENTLOG_PROGRESS_AFTER"
"""Seconds before a bar appears, instead of :data:`SHOW_AFTER_SECONDS` (0: at once)."""


def show_after() -> float:
    """How long a command runs before its bar appears (``AGENTLOG_PROGRESS_AFTER``)."""
    try:
        return max(0.0, float(os.environ.get(SHOW_AFTER_ENV_VAR, SHOW_AFTER_SECONDS)))
    except ValueError:
        return SHOW_AFTER_SECONDS


class RateColumn(ProgressColumn):
    """Work per second in the meter's own unit (``12,345 events/s``)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        shown = "?" if speed is None else f"{speed:,.0f}"
        return Text(f"{shown} {self.unit}/s", style="progress.data.speed")


class Meter:
    """Counts work done (bytes or events) and shows it once the work is slow.

    Use as a context manager; call :meth:`phase` to name and size each pass and
    :meth:`advance` as work is done. The bar is transient: it leaves no trace.
    """

    def __init__(self, console: Console, *, unit: str = "bytes") -> None:
        self.console = console
        self.unit = unit
        self.enabled = console.is_terminal
        self.started = time.monotonic()
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.label = ""
        self.total: float | None = None
        self.done = 0

    def __enter__(self) -> Meter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def phase(self, label: str, total: float | None) -> None:
        """Start a new pass: its label and how much work it is (None: unknown)."""
        self.label = label
        self.total = total
        self.done = 0
        if self.progress is not None and self.task is not None:
            self.progress.reset(self.task, total=total, description=label)

    def advance(self, amount: int) -> None:
        """Record ``amount`` more work done; shows the bar once the command is slow."""
        self.done += amount
        if not self.enabled:
            return
        if self.progress is None:
            if time.monotonic() - self.started < show_after():
                return
            self._start()
        assert self.progress is not None
        assert self.task is not None
        self.progress.update(self.task, completed=self.done)

    def _start(self) -> None:
        counter = (
            (DownloadColumn(), TransferSpeedColumn())
            if self.unit == "bytes"
            else (MofNCompleteColumn(), RateColumn(self.unit))
        )
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            *counter,
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task(
            self.label, total=self.total, completed=self.done
        )


def counted(items: Iterable[T], meter: Meter) -> Iterator[T]:
    """Pass the items through, advancing the meter by one for each."""
    for item in items:
        meter.advance(1)
        yield item


@contextlib.contextmanager
def working(console: Console, label: str) -> Iterator[None]:
    """A pulsing bar with the time elapsed while one call runs past a second.

    For work that reports no progress of its own (a fork copies its seed in one
    call): a timer starts the bar, so the call itself is not slowed. Silent when
    the console is not a terminal.
    """
    if not console.is_terminal:
        yield
        return
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    progress.add_task(label, total=None)
    timer = threading.Timer(show_after(), progress.start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        # A timer that already fired is let finish starting, so stop sees it.
        timer.join()
        progress.stop()
