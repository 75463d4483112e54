"""One view kept current from the log, a batch of notifications per transaction.

The library's ``ProjectionRunner`` applies each notification it is sent in a
transaction of its own: under a writer it folded fewer notifications a second
than the writer wrote, and the worker fell behind by tens of seconds
(docs/scale.md). :class:`BatchRunner` keeps its shape (a view built by the
factory, the library's subscription to the log, a thread that folds, the same
attributes and ``wait``/``run_forever``) but folds what the subscription has
delivered so far, up to :attr:`BatchRunner.BATCH` notifications, in one
transaction with one tracking position, as the in-process catch-up does
(:func:`~agentlog.application.catch_up.fold_batch`: the batch is recorded only
from the position it starts at). A batch and its position commit together, so
a runner killed anywhere resumes from the last batch committed: nothing twice,
nothing skipped.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventsourcing.persistence import InfrastructureFactory, WaitInterruptedError
from eventsourcing.utils import Environment

from agentlog.application.catch_up import fold_batch
from agentlog.application.projections import decode_notification

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

    from eventsourcing.application import Application
    from eventsourcing.persistence import Notification, TrackingRecorder
    from eventsourcing.projection import Projection

    from agentlog.application.view_rows import ProjectedEvent

TApp = TypeVar("TApp", bound="Application[Any]")
TICK = 0.1
"""Seconds between checks of the stop flag while waiting for notifications."""


class BatchRunner(Generic[TApp]):
    """A view, its projection and a subscription to ``application_class``'s
    log, folded a batch per transaction in a thread of its own."""

    BATCH = 500
    """Notifications folded in one transaction at most (the library's
    subscription reads the log 500 at a time); ``AGENTLOG_WORKER_BATCH`` sets
    another."""
    BATCH_ENV = "AGENTLOG_WORKER_BATCH"

    def __init__(
        self,
        *,
        application_class: type[TApp],
        projection_class: type[Projection[Any]],
        view_class: type[TrackingRecorder],
        env: Mapping[str, str],
    ) -> None:
        name = projection_class.name
        factory = InfrastructureFactory[Any].construct(
            env=Environment(name, {**os.environ, **env})
        )
        self.view: Any = factory.tracking_recorder(view_class)
        self.projection: Any = projection_class(view=self.view)
        self.app: TApp = application_class(env=dict(env))
        self.app_name: str = self.app.name
        self.position = self.view.max_tracking_id(self.app_name) or 0
        self.is_interrupted = threading.Event()
        self._error: BaseException | None = None
        setting = env.get(self.BATCH_ENV) or os.environ.get(self.BATCH_ENV)
        self.batch = max(1, int(setting or self.BATCH))
        self._delivered: queue.Queue[Notification] = queue.Queue(2 * self.batch)
        self._subscription = self.app.recorder.subscribe(
            gt=self.position, topics=self.projection.topics
        )
        self._threads = [
            threading.Thread(target=self._guarded, args=(job,), daemon=True)
            for job in (self._read, self._fold)
        ]

    # ------------------------------------------------------------- threads

    def _guarded(self, job: Any) -> None:
        try:
            job()
        except BaseException as error:  # re-raised by run_forever and __exit__
            if self._error is None:
                self._error = error
        finally:
            self.stop()

    def _read(self) -> None:
        """Hand each notification the subscription delivers to the folder."""
        for notification in self._subscription:
            while not self.is_interrupted.is_set():
                try:
                    self._delivered.put(notification, timeout=TICK)
                    break
                except queue.Full:
                    continue
            if self.is_interrupted.is_set():
                return

    def _fold(self) -> None:
        """Fold what has been delivered, a batch per transaction, until stopped."""
        while not self.is_interrupted.is_set():
            try:
                batch = [self._delivered.get(timeout=TICK)]
            except queue.Empty:
                continue
            while len(batch) < self.batch:
                try:
                    batch.append(self._delivered.get_nowait())
                except queue.Empty:
                    break
            self.fold(batch)

    def fold(self, batch: list[Notification]) -> None:
        """Fold ``batch`` (delivered in log order) in one transaction."""
        decoded: list[tuple[int, ProjectedEvent | None]] = [
            (n.id, decode_notification(self.app.mapper, n)) for n in batch
        ]
        self.position = fold_batch(
            self.projection, self.app_name, decoded, self.position, batch[-1].id
        )

    # ------------------------------------------------- the runner's interface

    def stop(self) -> None:
        """Stop after the batch being folded (if any) commits."""
        self.is_interrupted.set()
        self._subscription.stop()

    def run_forever(self, timeout: float | None = None) -> None:
        """Block until stopped or ``timeout``; re-raise the threads' error."""
        if self.is_interrupted.wait(timeout=timeout) and self._error is not None:
            error, self._error = self._error, None
            raise error

    def wait(self, notification_id: int | None, timeout: float = 1.0) -> None:
        """Block until the view has recorded ``notification_id`` (or ``timeout``)."""
        try:
            self.view.wait(
                application_name=self.app_name,
                notification_id=notification_id,
                timeout=timeout,
                interrupt=self.is_interrupted,
            )
        except WaitInterruptedError:
            self.run_forever(timeout=0)
            raise

    def __enter__(self) -> BatchRunner[TApp]:
        self._subscription.__enter__()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.stop()
        for thread in self._threads:
            thread.join()
        with contextlib.suppress(Exception):
            self._subscription.__exit__(exc_type, exc_val, exc_tb)
        self.app.close()
        self.run_forever(timeout=0)
