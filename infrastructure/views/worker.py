"""Keep the views current from a separate process (PostgreSQL, or POPO in tests).

One :class:`~agentlog.infrastructure.views.batch_runner.BatchRunner` per view
subscribes to the ``Sessions`` notification log and folds what it is sent a
batch at a time, each batch with its tracking position in one transaction.
In-process ``catch_up`` calls share those positions (a batch is recorded only
from the position it starts at), so the two can run side by side and no
notification is applied twice. SQLite cannot subscribe:
there, ``catch_up`` alone keeps the views current.

Run it with ``agentlog --store URL worker`` (docs/worker.md); ``python -m
agentlog.infrastructure.views.worker`` still runs it with the store taken from the
environment (``PERSISTENCE_MODULE=eventsourcing.postgres``, ``POSTGRES_*``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agentlog.application.search_hashing import TokenHashing
from agentlog.application.search_index import SearchProjection, SearchView
from agentlog.application.session_projections import (
    LineageProjection,
    ListingProjection,
    TitleProjection,
)
from agentlog.application.sessions import Sessions
from agentlog.domain.errors import StoreReadOnlyError, StoreURLError
from agentlog.infrastructure.backends import backend_named
from agentlog.infrastructure.key_store_setup import encryption_settings, open_key_store
from agentlog.infrastructure.views.batch_runner import BatchRunner

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from eventsourcing.projection import Projection

    from agentlog.application.ports import ViewClasses
    from agentlog.infrastructure.backends.backend import Backend

POLL_SECONDS = 0.2


class WorkerSessions(Sessions):
    """``Sessions`` as the worker reads it: a row it cannot read is skipped
    (logged) rather than stopping every view (``ViewMapper``)."""

    name = Sessions.name  # the views track positions under the application's name
    env: ClassVar[dict[str, str]] = {
        **Sessions.env,
        "MAPPER_TOPIC": "agentlog.infrastructure.mapper:ViewMapper",
    }


def _backend(env: Mapping[str, str]) -> tuple[str, Backend | None]:
    """The environment's ``PERSISTENCE_MODULE`` and the backend it names."""
    module = env.get("PERSISTENCE_MODULE") or os.environ.get("PERSISTENCE_MODULE", "")
    return module, backend_named(module)


def view_classes(env: Mapping[str, str]) -> ViewClasses:
    """The view classes named by the environment's ``PERSISTENCE_MODULE``."""
    module, backend = _backend(env)
    if backend is None or not backend.can_subscribe:
        msg = f"a view worker needs a store that can subscribe, not {module!r}"
        raise StoreURLError(msg)
    return backend.view_classes()


def search_pair(env: Mapping[str, str]) -> list[tuple[type[Any], type[Any]]]:
    """The search index's projection and view, unless search is off (docs/search.md)."""
    _, backend = _backend(env)
    setting = env.get("AGENTLOG_SEARCH") or os.environ.get("AGENTLOG_SEARCH", "")
    view = None if backend is None else backend.search_view()
    if setting.strip().lower() == "off" or view is None:
        return []
    return [(SearchProjection, hashing_view(view, env))]


def hashing_view(view: type[SearchView], env: Mapping[str, str]) -> type[SearchView]:
    """The search view class, hashing tokens under the sessions' keys when the
    environment turns encryption on (docs/encryption.md).

    A worker's runner builds its own view, which the in-process index's
    wiring (``SearchIndex``) never reaches: without this the worker would
    index the words themselves. The key store lives as long as the process."""
    settings = encryption_settings({**os.environ, **env})
    if settings is None:
        return view
    keys = open_key_store(settings.keystore, settings.master_key, env)
    return type(view.__name__, (view,), {"hashing": TokenHashing(keys)})


Pairs = list[tuple[type["Projection[Any]"], type[Any]]]


def view_pairs(env: Mapping[str, str]) -> Pairs:
    """Every view's projection and view class, for the environment's store."""
    classes = view_classes(env)
    return [
        (ListingProjection, classes.listing),
        (TitleProjection, classes.titles),
        (LineageProjection, classes.lineage),
        *search_pair(env),
    ]


def start_runners(
    stack: ExitStack,
    pairs: Pairs,
    env: Mapping[str, str],
    application_class: type[Sessions] = WorkerSessions,
    runner_class: type[BatchRunner[Sessions]] = BatchRunner,
) -> list[BatchRunner[Sessions]]:
    """A started ``BatchRunner`` per pair, stopped with ``stack``.

    The runner builds each view with the factory ``PERSISTENCE_MODULE`` names,
    so it is pointed at ours, as ``Sessions`` points its own: the views'
    connections then get the URL's libpq parameters and a pooler's settings,
    and their tables the locked creation; ours seals
    the views when encryption is on.
    """
    env = dict(env)
    _, backend = _backend(env)
    if backend is not None:
        env["PERSISTENCE_MODULE"] = backend.factory_topic
    return [
        stack.enter_context(
            runner_class(
                application_class=application_class,
                projection_class=projection,
                view_class=view,
                env=dict(env),
            )
        )
        for projection, view in pairs
    ]


@dataclass(frozen=True, slots=True)
class ViewPosition:
    """How far one view has folded the log: its last notification and the log's."""

    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)


def positions(runners: Sequence[BatchRunner[Sessions]]) -> list[ViewPosition]:
    """Each runner's view position against the log's last notification id.

    A view folds only its topics, so its position stays where its last own
    notification was: its lag counts from the first of its notifications it
    has not folded (none: no lag)."""
    out = []
    for runner in runners:
        recorder = runner.app.recorder
        head = recorder.max_notification_id() or 0
        position = runner.view.max_tracking_id(runner.app_name) or 0
        pending = recorder.select_notifications(
            start=position + 1, limit=1, topics=runner.projection.topics
        )
        position = head if not pending else pending[0].id - 1
        name = str(getattr(runner.view, "view_name", type(runner.view).__name__))
        out.append(ViewPosition(name.split(".")[0], position, head))
    return out


def check_writable(env: Mapping[str, str]) -> None:
    """Refuse a read-only store (a standby, ``?mode=ro``) before any view opens:
    the worker writes the views, and a standby's come from its primary."""
    app = Sessions(env=dict(env))
    try:
        read_only = app.read_only
    finally:
        app.close()
    if read_only:
        msg = (
            "a view worker writes the views, and this store is read-only: run it"
            " against the primary (a standby's views are replayed from there)"
        )
        raise StoreReadOnlyError(msg)


def run(
    env: Mapping[str, str],
    stop: Any,
    status: Callable[[list[ViewPosition]], None] | None = None,
    every: float = 0.0,
) -> None:
    """Run a runner per view until ``stop`` (an ``Event``) is set; errors re-raise.

    With ``status``, it is given the views' positions when they start, every
    ``every`` seconds (if positive) and when they stop."""
    pairs = view_pairs(env)  # a store that cannot subscribe is refused first
    check_writable(env)
    with ExitStack() as stack:
        runners = start_runners(stack, pairs, env)
        if status is not None:
            status(positions(runners))
        last = time.monotonic()
        while not stop.wait(POLL_SECONDS):
            for runner in runners:
                if runner.is_interrupted.is_set():
                    runner.run_forever(timeout=0)  # re-raises the runner's error
                    return
            if status is not None and every > 0 and time.monotonic() - last >= every:
                last = time.monotonic()
                status(positions(runners))
        if status is not None:
            status(positions(runners))


def main() -> None:  # pragma: no cover - exercised as a process in deployments
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run(dict(os.environ), stop)


if __name__ == "__main__":  # pragma: no cover
    main()
