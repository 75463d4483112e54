"""The ``agentlog`` command line (the console script is ``infrastructure.cli:main``)."""

from __future__ import annotations

from infrastructure.cli import reads, writes
from infrastructure.cli.program import cli, main

__all__ = ["cli", "main", "reads", "writes"]
