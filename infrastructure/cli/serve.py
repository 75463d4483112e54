"""The ``serve`` command: the read-only web viewer (docs/viewer.md).

``agentlog serve`` opens the store like every read (it never creates one) and
serves the viewer on 127.0.0.1 until stopped. ``--cwd`` and ``--owner``, or
``--caller`` (a session whose scope it takes), bind it to a scope, outside which
every session reads as missing. Binding beyond loopback
needs a token (``--token`` or ``AGENTLOG_SERVE_TOKEN``). Starlette and uvicorn are
imported only here, so no other command pays for them at start-up.
"""

from __future__ import annotations

import ipaddress
import os

import click

from agentlog.infrastructure.cli.interrupt import install_stop_handlers
from agentlog.infrastructure.cli.program import (
    EXIT_ERROR,
    CliState,
    cli,
    encodable_parameter,
    fail,
    opened,
    reported,
)
from agentlog.infrastructure.store import parse_store_url

DEFAULT_PORT = 8766
STOP_SECONDS = 2
"""How long a stop waits for open requests (live streams) before closing them."""
TOKEN_ENV = "AGENTLOG_SERVE_TOKEN"
LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@cli.command("serve")
@click.option(
    "--store",
    metavar="URL",
    help="The store (as the global --store; this one wins).",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="The address to listen on."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port (0: any free).",
)
@click.option(
    "--cwd",
    callback=encodable_parameter,
    help="Show only the sessions of this workspace (exact cwd).",
)
@click.option(
    "--owner",
    callback=encodable_parameter,
    help="Show only the sessions of this owner.",
)
@click.option(
    "--caller",
    metavar="SESSION_ID",
    callback=encodable_parameter,
    help="Show only what this session may read (its cwd and owner, docs/scope.md).",
)
@click.option(
    "--token",
    help=f"Require this token on every request (or set {TOKEN_ENV}); "
    "needed to listen beyond loopback.",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    store: str | None,
    host: str,
    port: int,
    cwd: str | None,
    owner: str | None,
    caller: str | None,
    token: str | None,
) -> None:
    """Serve a read-only web viewer of the sessions (http://127.0.0.1:8766)."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and token is None:
        msg = (
            f"listening on {host} (beyond loopback) needs a token: "
            f"--token or {TOKEN_ENV}"
        )
        raise fail(msg)
    if caller is not None and (cwd is not None or owner is not None):
        msg = "--caller takes its scope from the caller session; drop --cwd and --owner"
        raise fail(msg)
    if store is not None:
        with reported():
            parse_store_url(store)
        ctx.obj = CliState(store)
    import uvicorn

    from agentlog.application.browse import Browser
    from agentlog.application.query import SessionQuery
    from agentlog.application.scope import ANY, Scope
    from agentlog.infrastructure.web.live import LiveSignal
    from agentlog.infrastructure.web.server import build_app

    scope = Scope(
        cwd=ANY if cwd is None else cwd, owner=ANY if owner is None else owner
    )
    with opened(ctx) as app:
        if caller is not None:
            with reported():
                scope = SessionQuery(app).for_caller(caller).scope
        signal = LiveSignal(app)
        application = build_app(Browser(app, scope), token=token, signal=signal)
        config = uvicorn.Config(
            application,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            # An open live stream never ends by itself: without a bound, a
            # stop waits for every browser tab to go away.
            timeout_graceful_shutdown=STOP_SECONDS,
        )
        server = uvicorn.Server(config)
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"agentlog serve: http://{shown}:{port}/ (Ctrl-C stops)", err=True)
        try:
            server.run()
        except SystemExit as stop:
            # uvicorn could not listen (the port is taken, say): it has said
            # why in one line; that is a failure of this command.
            if stop.code not in (0, None):
                raise click.exceptions.Exit(EXIT_ERROR) from None
            raise
        finally:
            signal.close()
            # uvicorn gave the signals back to the default handlers.
            install_stop_handlers()
