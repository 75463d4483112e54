"""The ``agentlog`` command line (the console script is ``agentlog.__main__:main``,
which catches stop signals before it imports this)."""

from __future__ import annotations

# Importing the command modules registers their commands, in this order, in --help.
from agentlog.infrastructure.cli.demo import command as demo

# isort: split
from agentlog.infrastructure.cli import reads, search, writes

# isort: split
from agentlog.infrastructure.cli import erasure

# isort: split
from agentlog.infrastructure.cli import keys, mcp, migrate, schema, serve
from agentlog.infrastructure.cli.program import cli, main

__all__ = [
    "cli",
    "demo",
    "erasure",
    "keys",
    "main",
    "mcp",
    "migrate",
    "reads",
    "schema",
    "search",
    "serve",
    "writes",
]
