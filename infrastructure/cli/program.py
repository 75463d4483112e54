"""The ``agentlog`` program: global options, store opening, errors and output.

Every command opens the store named by ``--store`` (or ``AGENTLOG_STORE``, or
``sqlite:///agentlog.db`` in the current directory), runs one use case and closes the
store. Exit codes are a contract for scripts: 0 success, 1 a domain, query or store
error (one line on stderr, never a traceback), 2 a usage error, 130 a stop signal
(SIGINT or SIGTERM; one line saying what was stored). Every line printed goes
through :mod:`~agentlog.infrastructure.cli.terminal`. The commands themselves live
in :mod:`~agentlog.infrastructure.cli.reads` and its siblings.

The program is a click group, not typer: typer builds a pydantic ``TypeAdapter``
for every parameter it parses and renders help through ``rich.markdown``, which
made a one-command typer program cost 2.4 times ``import
eventsourcing.application`` before any work (docs/performance.md). This module
imports click and nothing heavy; the store, rich and the JSON encoder are
imported by the code that uses them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentlog.domain.errors import AgentlogError
from agentlog.infrastructure.cli.commands import COMMANDS
from agentlog.infrastructure.cli.interrupt import (
    EXIT_INTERRUPTED,
    Interrupted,
    ignore_stop_signals,
    install_stop_handlers,
    stopped_line,
    stopped_write_line,
)
from agentlog.infrastructure.cli.terminal import mask_secrets, printable
from agentlog.infrastructure.store import (
    DEFAULT_STORE_URL,
    STORE_ENV_VAR,
    parse_store_url,
    store_url_from_environment,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from agentlog.application.configuration import ConfiguredApplication
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Json
    from agentlog.infrastructure.cli.storage import StoredCheck

App = TypeVar("App", bound="ConfiguredApplication")
EXIT_ERROR = 1
EXIT_USAGE = 2
_BREAKS = re.compile(r"\s*\n\s*")
_C1_OR_DEL = re.compile(rb"\xc2[\x80-\x9f]|\x7f")
SEQ_MAX = 2**63 - 1
"""The largest seq a store can hold (a signed 64-bit integer column)."""


class StoppableContext(click.Context):
    """A command's context: a stop while click closes it is one line and exit 130."""

    def close(self) -> None:
        try:
            super().close()
        except Interrupted as stop:
            raise stop_exit(stopped_line(stop)) from None


class StoppableGroup(click.Group):
    """The command group: a stop signal in any command is one line and exit 130.

    Click would turn the ``KeyboardInterrupt`` into "Aborted!" and exit 1; a write
    reports what it stored before this (see :func:`opened`), so this catches the
    rest: reads, ``demo``, ``migrate``. Commands are lazy: a command's module is
    imported when that command runs, and ``--help`` lists the table of
    :mod:`~agentlog.infrastructure.cli.commands` without importing any.
    """

    context_class = StoppableContext

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Interrupted as stop:
            raise stop_exit(stopped_line(stop)) from None

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        """Parsing the arguments, or printing ``--help``: a stop is one line too."""
        try:
            return super().make_context(*args, **kwargs)
        except Interrupted as stop:
            raise stop_exit(stopped_line(stop)) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """No arguments: the help on stdout and exit 2 (click would use stderr)."""
        if not args:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(EXIT_USAGE)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, its module imported on first use (``--help`` imports none)."""
        entry = COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and entry is not None:
            importlib.import_module(entry.module)
        return self.commands.get(cmd_name)

    def format_commands(
        self, ctx: click.Context, formatter: click.HelpFormatter
    ) -> None:
        """The commands by panel, each with its summary from the table."""
        panels: dict[str, list[tuple[str, str]]] = {}
        for name, entry in COMMANDS.items():
            panels.setdefault(entry.panel, []).append((name, entry.summary))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)


def encodable(value: str | None) -> str | None:
    """An id typed as undecodable bytes (``$'\\xff'``) cannot name a stored session."""
    if value is None:
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"{printable(value, one_line=True)} is not valid UTF-8"
        raise click.BadParameter(msg) from None
    return value


def encodable_parameter(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> str | None:
    """:func:`encodable` as a click callback."""
    return encodable(value)


Decorated = Any
"""A command function being decorated (click's own type variable is private)."""

json_option: Callable[[Decorated], Decorated] = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Machine output: JSON with the spec's keys.",
)
session_id_argument: Callable[[Decorated], Decorated] = click.argument(
    "session_id", metavar="ID", callback=encodable_parameter
)
seq_argument: Callable[[Decorated], Decorated] = click.argument(
    "seq", metavar="SEQ", type=click.IntRange(0, SEQ_MAX)
)
"""An event's seq (0 is the first)."""


@dataclass(frozen=True)
class CliState:
    """What the global options decided, passed to every command."""

    store_url: str


# ----------------------------------------------------------------- plumbing


def _store_errors() -> tuple[type[BaseException], ...]:
    """Errors a database raises when it is unreachable or refuses a connection.

    Called only while an error propagates (an ``except`` clause's expression):
    psycopg's errors count once something imported psycopg, since nothing else
    raises them.
    """
    import sqlite3

    from eventsourcing.persistence import PersistenceError

    errors: list[type[BaseException]] = [PersistenceError, sqlite3.Error]
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        errors.append(psycopg.Error)
    return tuple(errors)


def one_line(text: str) -> str:
    """One safe line: breaks (a driver's multi-line error, say) become spaces,
    control characters visible escapes, passwords masked."""
    return printable(mask_secrets(_BREAKS.sub(" ", text).rstrip()), one_line=True)


def fail(message: str) -> click.exceptions.Exit:
    """Print one line on stderr; the caller raises the returned exit."""
    sys.stderr.write(one_line(message.strip()) + "\n")
    sys.stderr.flush()
    return click.exceptions.Exit(EXIT_ERROR)


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Turn a domain, query, store or file error into one line and exit 1."""
    try:
        yield
    except AgentlogError as error:
        raise fail(str(error)) from None
    except _store_errors() as error:
        raise fail(f"store error: {error}") from None
    except (OSError, UnicodeError) as error:
        raise fail(str(error)) from None


def state_of(ctx: click.Context) -> CliState:
    """The global options, as the callback left them for this command."""
    state = ctx.find_object(CliState)
    assert state is not None, "the global callback sets the state"
    return state


@contextlib.contextmanager
def opened(
    ctx: click.Context, *, create: bool = False, stored: StoredCheck | None = None
) -> Iterator[Sessions]:
    """The store of ``--store``, open for one command and closed after it.

    Only ``create`` may make a new SQLite file. On an error or a stop signal the
    store is closed without flushing; a write passes ``stored``, which a fresh
    connection runs to say exactly what was committed before the signal.
    """
    from agentlog.infrastructure.cli.storage import open_store

    with _opened(ctx, lambda url: open_store(url, create=create), stored) as app:
        yield app


@contextlib.contextmanager
def opened_views(ctx: click.Context) -> Iterator[ConfiguredApplication]:
    """The store of ``--store`` for a command that reads only its views (``ls``):
    opened without the session machinery, closed after it (see :func:`opened`).
    """
    from agentlog.infrastructure.cli.storage import open_store_views

    with _opened(ctx, open_store_views, None) as app:
        yield app


@contextlib.contextmanager
def _opened(
    ctx: click.Context, open_app: Callable[[str], App], stored: StoredCheck | None
) -> Iterator[App]:
    """``open_app(url)`` for one command: errors one line, stops exit 130."""
    from agentlog.infrastructure.cli.storage import abandon

    url = state_of(ctx).store_url
    try:
        with reported():
            app = open_app(url)
            try:
                yield app
            except BaseException:
                abandon(app)
                raise
            app.close()
    except Interrupted as stop:
        if stored is None:
            raise stop_exit(stopped_line(stop)) from None
        raise stop_exit(stopped_write_line(stop, _committed(url, stored))) from None


class _StoppedExit(click.exceptions.Exit):
    """Exit 130 once the stopped command's one line is printed."""


def stop_exit(line: str) -> _StoppedExit:
    """Print the one line of a stopped command; the caller raises the exit."""
    sys.stderr.write(one_line(line) + "\n")
    sys.stderr.flush()
    return _StoppedExit(EXIT_INTERRUPTED)


def _committed(url: str, check: StoredCheck) -> list[str] | None:
    """What a stopped write stored, or None when even that check cannot finish."""
    from agentlog.infrastructure.cli.storage import stored_now

    try:
        return stored_now(url, check)
    except (Exception, Interrupted):
        return None


def emit_json(value: Json) -> None:
    """Compact, lossless JSON on stdout (any depth, any integer size).

    JSON already escapes C0 controls; DEL and the C1 controls (which some terminals
    obey) are written as ``\\u`` escapes too, which decode to the same strings.
    """
    from agentlog.domain.json import dumps

    data = _C1_OR_DEL.sub(_json_escape, dumps(value).lstrip(b" ")) + b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def emit_json_stream(head: dict[str, Json], key: str, items: Iterable[Json]) -> None:
    """``emit_json({**head, key: list(items)})``, written an item at a time.

    The same bytes, in memory bounded by one item (``surface --json`` of a very
    long session).
    """

    from agentlog.domain.json import dumps

    def piece(value: Json) -> bytes:
        return _C1_OR_DEL.sub(_json_escape, dumps(value).lstrip(b" "))

    write = sys.stdout.buffer.write
    sys.stdout.flush()
    write(b"{")
    for name, value in head.items():
        write(piece(name) + b":" + piece(value) + b",")
    write(piece(key) + b":[")
    for index, item in enumerate(items):
        write(piece(item) if index == 0 else b"," + piece(item))
    write(b"]}\n")
    sys.stdout.buffer.flush()


def _json_escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode("utf-8"))


# ------------------------------------------------------------------ global


@click.group(
    cls=StoppableGroup,
    name="agentlog",
    help="An event-sourced store for AI-agent sessions. Start with: agentlog demo",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--store",
    metavar="URL",
    help=(
        "memory:, sqlite:///path.db or "
        "postgresql://user:password@host:port/db?schema=name "
        f"(env {STORE_ENV_VAR}; default {DEFAULT_STORE_URL})"
    ),
)
@click.pass_context
def cli(ctx: click.Context, store: str | None) -> None:
    """Pick the store every command uses."""
    url = store_url_from_environment(store)
    with reported():
        parse_store_url(url)
    ctx.obj = CliState(url)


def _survive_any_encoding() -> None:
    """A character stdout's encoding lacks is written as an escape, not a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


CLOSED_AT_START: list[str] = []
"""The standard streams the program started without (``<&-``, ``>&-``)."""


def _reopen_closed_streams() -> None:
    """Open a standard descriptor closed at start on the null device.

    Otherwise the next file opened (the SQLite database) would take its number,
    and what reads or writes it as stdin or stdout would reach that file; and
    Python's ``sys.stdout`` would be ``None`` (a traceback at the first write).
    Output to it is discarded, as every line printed to a closed stdout is.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115
            CLOSED_AT_START.append(name)


def main() -> None:
    """Run the command line; the console script enters through :mod:`agentlog.__main__`.

    A stop landing outside a command (click parsing, printing ``--help``, its
    steps around the command) is the same one line and exit 130 as inside one.
    """
    try:
        _reopen_closed_streams()
        _survive_any_encoding()
        install_stop_handlers()
        cli(prog_name="agentlog")
    except Interrupted as stop:
        sys.exit(stop_exit(stopped_line(stop)).exit_code)
    finally:
        ignore_stop_signals()
