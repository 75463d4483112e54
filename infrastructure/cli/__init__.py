"""The ``agentlog`` command line (the console script is ``infrastructure.cli:main``)."""

from __future__ import annotations

# Importing the command modules registers their commands, in this order, in --help.
from infrastructure.cli import demo, reads, writes
from infrastructure.cli.program import cli, main

__all__ = ["cli", "demo", "main", "reads", "writes"]
