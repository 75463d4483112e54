"""``python -m agentlog.infrastructure.cli``: the same command line as ``agentlog``."""

from __future__ import annotations

from agentlog.infrastructure.cli import main

main()
