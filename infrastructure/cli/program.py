"""The ``agentlog`` program: global options, store opening, errors and output.

Every command opens the store named by ``--store`` (or ``AGENTLOG_STORE``, or
``sqlite:///agentlog.db`` in the current directory), runs one use case and closes the
store. Exit codes are a contract for scripts: 0 success, 1 a domain, query or store
error (one line on stderr, never a traceback), 2 a usage error, 130 a stop signal
(SIGINT or SIGTERM; one line saying what was stored). Every line printed goes
through :mod:`~agentlog.infrastructure.cli.terminal`. The commands themselves live
in :mod:`~agentlog.infrastructure.cli.reads` and
:mod:`~agentlog.infrastructure.cli.writes`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sqlite3
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from eventsourcing.persistence import PersistenceError as RecorderError
from rich.console import Console
from rich.segment import Segment
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_command_name

from agentlog.domain.errors import AgentlogError
from agentlog.domain.json import dumps
from agentlog.infrastructure.cli.commands import COMMANDS
from agentlog.infrastructure.cli.interrupt import (
    EXIT_INTERRUPTED,
    Interrupted,
    ignore_stop_signals,
    install_stop_handlers,
    stopped_line,
    stopped_write_line,
)
from agentlog.infrastructure.cli.storage import abandon, open_store, stored_now
from agentlog.infrastructure.cli.terminal import mask_secrets, printable
from agentlog.infrastructure.store import (
    DEFAULT_STORE_URL,
    STORE_ENV_VAR,
    parse_store_url,
    store_url_from_environment,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from rich.console import ConsoleOptions, RenderableType

    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Json
    from agentlog.infrastructure.cli.storage import StoredCheck

EXIT_ERROR = 1
_BREAKS = re.compile(r"\s*\n\s*")
_C1_OR_DEL = re.compile(rb"\xc2[\x80-\x9f]|\x7f")
PIPE_WIDTH = 160
"""Columns for a file or pipe (rich would assume 80), unless COLUMNS is set."""


class StoppableGroup(TyperGroup):
    """The command group: a stop signal in any command is one line and exit 130.

    Click would turn the ``KeyboardInterrupt`` into "Aborted!" and exit 1; a write
    reports what it stored before this (see :func:`opened`), so this catches the
    rest: reads, ``demo``, ``migrate``.
    """

    # Any: the parameter's type is typer's vendored click Context (private).
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Interrupted as stop:
            raise stop_exit(stopped_line(stop)) from None

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """Parsing the arguments, or printing ``--help``: a stop is one line too."""
        try:
            return super().make_context(*args, **kwargs)
        except Interrupted as stop:
            raise stop_exit(stopped_line(stop)) from None

    # Lazy commands: a command's module is imported when that command runs.
    listing = False
    """True while ``--help`` lists the commands: each is its table entry."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command, its module imported on first use (``--help`` imports none)."""
        known = self.commands.get(cmd_name)
        entry = COMMANDS.get(cmd_name)
        if known is not None or entry is None:
            return known
        if self.listing:
            return TyperCommand(
                cmd_name, help=entry.summary, rich_help_panel=entry.panel
            )
        importlib.import_module(entry.module)
        for info in cli.registered_commands:
            assert info.callback is not None, "every command has a function"
            name = info.name or get_command_name(info.callback.__name__)
            if name not in self.commands:
                command = get_command_from_info(
                    info,
                    pretty_exceptions_short=cli.pretty_exceptions_short,
                    rich_markup_mode=cli.rich_markup_mode,
                )
                self.add_command(command, name)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


cli = typer.Typer(
    cls=StoppableGroup,
    name="agentlog",
    help="An event-sourced store for AI-agent sessions. Start with: agentlog demo",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Machine output: JSON with the spec's keys.")
]
SEQ_MAX = 2**63 - 1
"""The largest seq a store can hold (a signed 64-bit integer column)."""


def encodable(value: str | None) -> str | None:
    """An id typed as undecodable bytes (``$'\\xff'``) cannot name a stored session."""
    if value is None:
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        msg = f"{printable(value, one_line=True)} is not valid UTF-8"
        raise typer.BadParameter(msg) from None
    return value


SessionId = Annotated[
    str,
    typer.Argument(metavar="ID", help="A session id.", callback=encodable),
]
Seq = Annotated[
    int,
    typer.Argument(
        metavar="SEQ", min=0, max=SEQ_MAX, help="An event's seq (0 is the first)."
    ),
]


class SafeConsole(Console):
    """A console whose every written segment of text is :func:`printable`.

    Renderers escape data before layout (so widths stay right); this is the net
    under them: a control character that reaches a segment is written as an escape.
    Rich's own control segments (cursor moves, a progress bar's redraw) pass.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
            else:
                yield Segment(printable(segment.text), segment.style)


def make_console(*, stderr: bool = False) -> Console:
    """A console that never reads markup from data, wide when not a terminal."""
    console = SafeConsole(stderr=stderr, markup=False, emoji=False, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
    return console


out = make_console()
err = make_console(stderr=True)


@dataclass(frozen=True)
class CliState:
    """What the global options decided, passed to every command."""

    store_url: str


# ----------------------------------------------------------------- plumbing


def _store_errors() -> tuple[type[BaseException], ...]:
    """Errors a database raises when it is unreachable or refuses a connection."""
    errors: list[type[BaseException]] = [RecorderError, sqlite3.Error]
    with contextlib.suppress(ImportError):
        import psycopg

        errors.append(psycopg.Error)
    return tuple(errors)


def one_line(text: str) -> str:
    """One safe line: breaks (a driver's multi-line error, say) become spaces,
    control characters visible escapes, passwords masked."""
    return printable(mask_secrets(_BREAKS.sub(" ", text).rstrip()), one_line=True)


def fail(message: str) -> typer.Exit:
    """Print one line on stderr; the caller raises the returned exit."""
    sys.stderr.write(one_line(message.strip()) + "\n")
    sys.stderr.flush()
    return typer.Exit(EXIT_ERROR)


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


def state_of(ctx: typer.Context) -> CliState:
    """The global options, as the callback left them for this command."""
    state = ctx.find_object(CliState)
    assert state is not None, "the global callback sets the state"
    return state


@contextlib.contextmanager
def opened(
    ctx: typer.Context, *, create: bool = False, stored: StoredCheck | None = None
) -> Iterator[Sessions]:
    """The store of ``--store``, open for one command and closed after it.

    Only ``create`` may make a new SQLite file. On an error or a stop signal the
    store is closed without flushing; a write passes ``stored``, which a fresh
    connection runs to say exactly what was committed before the signal.
    """
    url = state_of(ctx).store_url
    try:
        with reported():
            app = open_store(url, create=create)
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


class _StoppedExit(typer.Exit):
    """Exit 130 once the stopped command's one line is printed."""


def stop_exit(line: str) -> _StoppedExit:
    """Print the one line of a stopped command; the caller raises the exit."""
    sys.stderr.write(one_line(line) + "\n")
    sys.stderr.flush()
    return _StoppedExit(EXIT_INTERRUPTED)


def unreported_stop(done: SystemExit) -> Interrupted | None:
    """The stop behind an exit 130 that printed no line, if that is what it was.

    A stop landing in typer's own steps between parsing and the command (a few
    bytecodes) becomes a bare exit 130: typer catches the ``KeyboardInterrupt``.
    """
    if done.code != EXIT_INTERRUPTED:
        return None
    seen: set[int] = set()
    cause: BaseException | None = done
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, _StoppedExit):
            return None
        if isinstance(cause, Interrupted):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def _committed(url: str, check: StoredCheck) -> list[str] | None:
    """What a stopped write stored, or None when even that check cannot finish."""
    try:
        return stored_now(url, check)
    except (Exception, Interrupted):
        return None


def say(console: Console, line: str, style: str | None = None) -> None:
    """One line, never wrapped: scripts read it."""
    console.print(one_line(line), style=style, soft_wrap=True)


def emit_json(value: Json) -> None:
    """Compact, lossless JSON on stdout (any depth, any integer size).

    JSON already escapes C0 controls; DEL and the C1 controls (which some terminals
    obey) are written as ``\\u`` escapes too, which decode to the same strings.
    """
    data = _C1_OR_DEL.sub(_json_escape, dumps(value).lstrip(b" ")) + b"\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def emit_json_stream(head: dict[str, Json], key: str, items: Iterable[Json]) -> None:
    """``emit_json({**head, key: list(items)})``, written an item at a time.

    The same bytes, in memory bounded by one item (``surface --json`` of a very
    long session).
    """

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


@cli.callback()
def configure(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help=(
                "memory:, sqlite:///path.db or "
                "postgresql://user:password@host:port/db?schema=name "
                f"(env {STORE_ENV_VAR}; default {DEFAULT_STORE_URL})"
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
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

    A stop landing outside a command (typer building the command group, or its
    steps around the command) is the same one line and exit 130 as inside one.
    """
    try:
        _reopen_closed_streams()
        _survive_any_encoding()
        install_stop_handlers()
        cli(prog_name="agentlog")
    except Interrupted as stop:
        sys.exit(stop_exit(stopped_line(stop)).exit_code)
    except SystemExit as done:
        unreported = unreported_stop(done)
        if unreported is not None:
            stop_exit(stopped_line(unreported))
        raise
    finally:
        ignore_stop_signals()
