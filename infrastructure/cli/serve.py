"""The ``serve`` command: the read-only web viewer (docs/viewer.md).

``agentlog serve`` opens the store like every read (it never creates one) and
serves the viewer on 127.0.0.1 until stopped. ``--cwd`` and ``--owner`` bind it to
a scope, outside which every session reads as missing. Binding beyond loopback
needs a token (``--token`` or ``AGENTLOG_SERVE_TOKEN``). Starlette and uvicorn are
imported only here, so no other command pays for them at start-up.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Annotated

import typer

from agentlog.infrastructure.cli.interrupt import install_stop_handlers
from agentlog.infrastructure.cli.program import (
    EXIT_ERROR,
    CliState,
    cli,
    encodable,
    fail,
    opened,
    reported,
)
from agentlog.infrastructure.store import parse_store_url

DEFAULT_PORT = 8766
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


@cli.command("serve", rich_help_panel="Read")
def serve_command(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="The store (as the global --store; this one wins).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="The address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="The port (0: any free).")
    ] = DEFAULT_PORT,
    cwd: Annotated[
        str | None,
        typer.Option(
            "--cwd",
            callback=encodable,
            help="Show only the sessions of this workspace (exact cwd).",
        ),
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option(
            "--owner", callback=encodable, help="Show only the sessions of this owner."
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help=f"Require this token on every request (or set {TOKEN_ENV}); "
            "needed to listen beyond loopback.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve a read-only web viewer of the sessions (http://127.0.0.1:8766)."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and token is None:
        msg = (
            f"listening on {host} (beyond loopback) needs a token: "
            f"--token or {TOKEN_ENV}"
        )
        raise fail(msg)
    if store is not None:
        with reported():
            parse_store_url(store)
        ctx.obj = CliState(store)
    import uvicorn

    from agentlog.application.browse import Browser
    from agentlog.application.scope import ANY, Scope
    from agentlog.infrastructure.web.server import build_app

    scope = Scope(
        cwd=ANY if cwd is None else cwd, owner=ANY if owner is None else owner
    )
    with opened(ctx) as app:
        application = build_app(Browser(app, scope), token=token)
        config = uvicorn.Config(
            application,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        server = uvicorn.Server(config)
        shown = f"[{host}]" if ":" in host else host
        typer.echo(f"agentlog serve: http://{shown}:{port}/ (Ctrl-C stops)", err=True)
        try:
            server.run()
        except SystemExit as stop:
            # uvicorn could not listen (the port is taken, say): it has said
            # why in one line; that is a failure of this command.
            if stop.code not in (0, None):
                raise typer.Exit(EXIT_ERROR) from None
            raise
        finally:
            # uvicorn gave the signals back to the default handlers.
            install_stop_handlers()
