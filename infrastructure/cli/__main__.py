"""``python -m infrastructure.cli``: the same command line as ``agentlog``."""

from __future__ import annotations

from infrastructure.cli import main

main()
