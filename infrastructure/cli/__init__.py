"""The ``agentlog`` command line (the console script is ``agentlog.__main__:main``,
which catches stop signals before it imports this).

Each command's module is imported when that command runs
(:mod:`~agentlog.infrastructure.cli.commands` lists them).
"""

from __future__ import annotations

from agentlog.infrastructure.cli.program import cli, main

__all__ = ["cli", "main"]
