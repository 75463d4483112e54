"""The consoles the commands print through: rich, every segment made printable.

Apart from :mod:`~agentlog.infrastructure.cli.program` so that ``agentlog --help``
and a usage error never import rich: only a command that draws output does.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.console import Console
from rich.segment import Segment

from agentlog.infrastructure.cli.program import one_line
from agentlog.infrastructure.cli.terminal import printable

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import ConsoleOptions, RenderableType

PIPE_WIDTH = 160
"""Columns for a file or pipe (rich would assume 80), unless COLUMNS is set."""


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


def say(console: Console, line: str, style: str | None = None) -> None:
    """One line, never wrapped: scripts read it."""
    console.print(one_line(line), style=style, soft_wrap=True)
