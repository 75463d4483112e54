"""``agentlog serve``: loopback by default, a token beyond it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog.infrastructure.cli.serve import is_loopback
from tests.cli.conftest import cli_env, run_cli

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.slow
def test_listening_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env().items() if k != "AGENTLOG_SERVE_TOKEN"}
    refused = run_cli("serve", "--host", "0.0.0.0", cwd=tmp_path, env=env)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "listening on 0.0.0.0 (beyond loopback) needs a token: --token or "
        "AGENTLOG_SERVE_TOKEN"
    ]
