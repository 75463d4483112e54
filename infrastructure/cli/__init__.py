"""The ``agentlog`` command line (the console script is ``infrastructure.cli:main``)."""

from __future__ import annotations

from infrastructure.cli.commands import cli, main

__all__ = ["cli", "main"]
