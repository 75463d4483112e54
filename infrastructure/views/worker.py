"""Keep the views current from a separate process (PostgreSQL, or POPO in tests).

One library ``ProjectionRunner`` per view subscribes to the ``Sessions``
notification log and applies each event with its tracking position in one
transaction. In-process ``catch_up`` calls share those positions, so the two can
run side by side and no notification is applied twice. SQLite cannot subscribe:
there, ``catch_up`` alone keeps the views current.

Run it with ``python -m agentlog.infrastructure.views.worker`` (environment as for the
application: ``PERSISTENCE_MODULE=eventsourcing.postgres``, ``POSTGRES_*``).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.projection import ProjectionRunner

from agentlog.application.projections import (
    LineageProjection,
    ListingProjection,
    TitleProjection,
)
from agentlog.application.search_index import SearchProjection
from agentlog.application.sessions import Sessions
from agentlog.domain.errors import StoreURLError
from agentlog.infrastructure.backends import backend_named

if TYPE_CHECKING:
    from collections.abc import Mapping

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
    return [(SearchProjection, view)]


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
) -> list[ProjectionRunner[Sessions, Any]]:
    """A started library ``ProjectionRunner`` per pair, stopped with ``stack``."""
    return [
        stack.enter_context(
            ProjectionRunner(
                application_class=application_class,
                projection_class=projection,
                view_class=view,
                env=dict(env),
            )
        )
        for projection, view in pairs
    ]


def run(env: Mapping[str, str], stop: Any) -> None:
    """Run a runner per view until ``stop`` (an ``Event``) is set; errors re-raise."""
    with ExitStack() as stack:
        runners = start_runners(stack, view_pairs(env), env)
        while not stop.wait(POLL_SECONDS):
            for runner in runners:
                if runner.is_interrupted.is_set():
                    runner.run_forever(timeout=0)  # re-raises the runner's error
                    return


def main() -> None:  # pragma: no cover - exercised as a process in deployments
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    run(dict(os.environ), stop)


if __name__ == "__main__":  # pragma: no cover
    main()
