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


@pytest.mark.slow
def test_a_caller_binding_is_refused_beside_cwd_and_for_an_unknown_caller(
    tmp_path: Path,
) -> None:
    from agentlog import open_sessions
    from tests.viewer.support import scripted

    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    app = open_sessions(url)
    scripted(app, session_id="me")
    app.close()
    both = run_cli(
        "--store", url, "serve", "--caller", "me", "--cwd", "/x", cwd=tmp_path
    )
    assert both.returncode == 1
    assert both.stderr.strip().splitlines() == [
        "--caller takes its scope from the caller session; drop --cwd and --owner"
    ]
    unknown = run_cli("--store", url, "serve", "--caller", "nobody", cwd=tmp_path)
    assert unknown.returncode == 1
    [line] = unknown.stderr.strip().splitlines()
    assert 'caller session "nobody" not found' in line


@pytest.mark.slow
def test_a_caller_bound_server_shows_only_what_the_caller_may_read(
    tmp_path: Path,
) -> None:
    import urllib.request

    from agentlog import open_sessions
    from tests.viewer.support import scripted
    from tests.viewer.test_browser import serving

    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    app = open_sessions(url)
    mine = scripted(app, session_id="me", cwd="/ws/a", owner="ann")
    same = scripted(app, cwd="/ws/a", owner="ann", words="shared")
    unowned = scripted(app, cwd="/ws/a", words="unowned")
    other = scripted(app, cwd="/ws/b", owner="ann", prompt="Secret plan")
    app.close()
    with serving(url, "--caller", mine) as base:
        with urllib.request.urlopen(base + "/api/sessions", timeout=30) as response:
            listed = response.read()
        with urllib.request.urlopen(base + "/", timeout=30) as response:
            page = response.read()
    for body in (listed, page):
        assert mine.encode() in body and same.encode() in body
        for hidden in (unowned, other, "Secret plan"):
            assert hidden.encode() not in body
