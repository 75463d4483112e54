"""The ``mcp`` command: the model tools for one caller, over MCP (docs/tools.md#mcp).

``agentlog mcp --caller ID`` serves the five read-only tools of
:mod:`agentlog.application.model_tools` on stdin/stdout (what an MCP client that
launches servers expects), or with ``--http`` over streamable HTTP on 127.0.0.1.
Like every read, it never creates a store, and an unknown caller stops it before
it serves anything: one line on stderr, exit 1. SIGINT or SIGTERM ends it with
``interrupted by SIGTERM`` and exit 130, whether or not the client still holds
the pipe.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from agentlog.application.model_tools import DEFAULT_MAX_SEARCH_RESULTS, ModelTools
from agentlog.domain.errors import SessionQueryError
from agentlog.infrastructure.cli.interrupt import (
    EXIT_INTERRUPTED,
    Interrupted,
    install_stop_handlers,
    stopped_line,
)
from agentlog.infrastructure.cli.program import (
    CLOSED_AT_START,
    EXIT_ERROR,
    CliState,
    cli,
    encodable_parameter,
    fail,
    one_line,
    opened,
    reported,
)
from agentlog.infrastructure.cli.storage import abandon
from agentlog.infrastructure.store import parse_store_url

SEARCH_MAX = 10_000
DEFAULT_PORT = 8765
HTTP_URL = "http://127.0.0.1:PORT/mcp"
"""Where ``--http`` serves (``mcp_server.HTTP_HOST`` and ``HTTP_PATH``)."""


@cli.command("mcp")
@click.option(
    "--caller",
    required=True,
    metavar="SESSION_ID",
    callback=encodable_parameter,
    help="The session whose agent calls the tools; they see only what "
    "its scope allows (its workspace).",
)
@click.option(
    "--store",
    metavar="URL",
    help="The store (as the global --store; this one wins).",
)
@click.option(
    "--max-search-results",
    type=click.IntRange(1, SEARCH_MAX),
    default=DEFAULT_MAX_SEARCH_RESULTS,
    show_default=True,
    metavar="N",
    help=f"Results one search call returns at most (1 to {SEARCH_MAX}).",
)
@click.option(
    "--http",
    is_flag=True,
    help=f"Serve streamable HTTP at {HTTP_URL} instead of stdio.",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port of --http.",
)
@click.pass_context
def mcp_command(
    ctx: click.Context,
    caller: str,
    store: str | None,
    max_search_results: int,
    http: bool,
    port: int,
) -> None:
    """Serve the model tools to an MCP client, bound to one caller session."""
    # The SDK (and its web stack) is imported here, not with the command line:
    # it would double the start-up time of every other command.
    import anyio

    from agentlog.infrastructure.mcp_server import (
        build_server,
        log_to_stderr,
        serve_http,
        serve_stdio,
    )

    if store is not None:
        with reported():
            parse_store_url(store)
        ctx.obj = CliState(store)
    log_to_stderr()
    with opened(ctx) as app:
        try:
            tools = ModelTools(app, caller, max_search_results=max_search_results)
        except SessionQueryError as error:
            raise fail(str(error)) from None
        server = build_server(tools)
        if http:
            try:
                serve_http(server, port)
            except SystemExit as stop:
                # The web server could not start (the port is taken, say): it
                # has said why in one line; a failure exits 1 (it exits 3).
                if stop.code not in (0, None):
                    raise click.exceptions.Exit(EXIT_ERROR) from None
                raise
            return
        for name in ("stdin", "stdout"):
            if name in CLOSED_AT_START:  # now the null device: no client there
                msg = (
                    f"agentlog mcp serves MCP on stdin and stdout, and {name} is "
                    "closed (--http serves without them)"
                )
                raise fail(msg)

        def stopped(signum: int) -> NoReturn:
            # The SDK reads stdin in a worker thread blocked in read(): a normal
            # exit would wait for the client to close the pipe. Nothing is
            # pending (the tools only read), so the store is closed and the
            # process ends here.
            abandon(app)
            sys.stderr.write(one_line(stopped_line(Interrupted(signum))) + "\n")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)

        try:
            anyio.run(serve_stdio, server, stopped)
        except Interrupted as early:  # before the event loop took the signals
            stopped(early.signum)
        finally:
            # The event loop gave the signals back to the default handlers.
            install_stop_handlers()
