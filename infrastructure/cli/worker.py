"""The ``worker`` command: keep the views current beside a service (docs/worker.md).

``agentlog --store postgresql://… worker`` runs one ``BatchRunner``
per view (listing, titles, lineage and, unless ``AGENTLOG_SEARCH=off``, the
search index), each subscribed to the store's notification log, until SIGINT or
SIGTERM. It prints one status line when it starts, every ``--status-every``
seconds and when it stops: each view's position and its lag behind the log. A
stop lets each runner finish the batch it is applying (a batch and its position
commit together), so a worker stopped in any way — even killed — resumes where
its views stand, applying nothing twice and skipping nothing.
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING

import click

from agentlog.infrastructure.cli.interrupt import install_stop_handlers
from agentlog.infrastructure.cli.program import cli, reported, state_of
from agentlog.infrastructure.store import parse_store_url

if TYPE_CHECKING:
    from types import FrameType

    from agentlog.infrastructure.views.worker import ViewPosition

DEFAULT_STATUS_EVERY = 10.0


def status_line(views: list[ViewPosition]) -> str:
    """One line: the log's head and each view's position and lag."""
    head = max((view.head for view in views), default=0)
    parts = [f"{view.name} {view.position} (lag {view.lag})" for view in views]
    worst = max((view.lag for view in views), default=0)
    health = "current" if worst == 0 else f"behind by {worst}"
    return f"agentlog worker: log at {head}, {health}: " + ", ".join(parts)


@cli.command("worker")
@click.option(
    "--store",
    metavar="URL",
    help="The store (as the global --store; this one wins).",
)
@click.option(
    "--status-every",
    type=click.FloatRange(min=0.0),
    default=DEFAULT_STATUS_EVERY,
    show_default=True,
    metavar="SECONDS",
    help="Print the views' positions and lag this often (0: only at start and stop).",
)
@click.pass_context
def worker_command(ctx: click.Context, store: str | None, status_every: float) -> None:
    """Keep the views and search index current (PostgreSQL; SIGINT/SIGTERM stop)."""
    from agentlog.infrastructure.views.worker import run, view_pairs

    url = store if store is not None else state_of(ctx).store_url
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def say(views: list[ViewPosition]) -> None:
        click.echo(status_line(views), err=True)

    with reported():
        config = parse_store_url(url)
        env = dict(config.env)
        pairs = view_pairs(env)  # refuses a store that cannot subscribe
        names = ", ".join(
            projection.name.removeprefix("agentlog_") for projection, _ in pairs
        )
        click.echo(
            f"agentlog worker: {config.display}: {names}; SIGINT or SIGTERM stops",
            err=True,
        )
        previous = {
            sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            run(env, stop, status=say, every=status_every)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            install_stop_handlers()
    click.echo("agentlog worker: stopped", err=True)
