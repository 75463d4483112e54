"""Hostile data never drives the terminal, and no password is ever printed.

A session whose id and text hold ESC sequences (colour, clear screen, an OSC window
title), BEL, DEL, C1 controls and bidi overrides is read with every command; the raw
bytes written must hold none of them, only their visible escapes.
"""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING

import pytest

from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from agentlog.infrastructure.cli.terminal import mask_secrets, printable
from agentlog.infrastructure.store import open_sessions
from tests.cli.conftest import cli_env, run_cli

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Result


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

HOSTILE = "red\x1b[31m clear\x1b[2J title\x1b]0;pwned\x07 del\x7f csi\x9b1m rlo\u202e"
HOSTILE_ID = "id\x1b[31m\x9b\x07"
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]")
"""Bytes of a raw control character (tab and newline aside) in UTF-8 output."""


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    url = f"sqlite:///{directory / 'agentlog.db'}"
    app = open_sessions(url)
    handle = app.create_session(cwd=f"/cwd/{HOSTILE}", session_id=HOSTILE_ID)
    agent = ScriptedAgent(handle)
    agent.start_turn(f"prompt {HOSTILE}")
    (call,) = agent.model_step(
        reasoning=f"thinking {HOSTILE}",
        text=f"answer {HOSTILE}",
        calls=[("read_file", {"path": HOSTILE})],
    )
    agent.tool_result(call, f"output {HOSTILE}\nsecond line")
    agent.end_step()
    agent.model_step(text=f"done {HOSTILE}")
    agent.end_step()
    agent.end_turn()
    app.close()
    return url, directory


def assert_safe(result: Result) -> None:
    assert "Traceback" not in result.stderr, result
    for stream in (result.raw_stdout, result.stderr.encode()):
        assert not RAW.search(stream), (result.args, stream)


READS = [
    ["ls"],
    ["show", HOSTILE_ID],
    ["messages", HOSTILE_ID],
    ["surface", HOSTILE_ID],
    ["event", HOSTILE_ID, "4", "--before", "3", "--after", "3"],
    ["trace", HOSTILE_ID],
    ["trace-event", HOSTILE_ID, "4"],
    ["export", HOSTILE_ID],
    ["repair", HOSTILE_ID],
    ["show", "missing\x1b[2J\x07"],
    ["fork", HOSTILE_ID, "--id", HOSTILE_ID],
]


@pytest.mark.parametrize("args", READS, ids=lambda args: args[0])
def test_every_human_output_escapes_control_characters(
    hostile_store: tuple[str, Path], args: list[str]
) -> None:
    url, directory = hostile_store
    result = run_cli("--store", url, *args, cwd=directory)
    if args[0] == "export":
        # Export is the lossless file format, not human output: JSON escapes C0
        # controls; C1 and DEL are written as they are, and must round-trip.
        assert result.returncode == 0, result
        assert "\\u001b[31m" in result.stdout
        return
    assert_safe(result)
    if args[0] in {"show", "messages", "surface", "event"} and "missing" not in args[1]:
        assert "\\x1b[2J" in result.stdout, result.stdout
        assert "\\x9b1m" in result.stdout


def test_ids_are_shown_escaped(hostile_store: tuple[str, Path]) -> None:
    url, directory = hostile_store
    listing = run_cli("--store", url, "ls", cwd=directory).ok()
    assert "id\\x1b[31m\\x9b\\x07" in listing.stdout
    missing = run_cli("--store", url, "show", "a\x1b]0;x\x07", cwd=directory)
    assert missing.returncode == 1
    assert missing.stderr == 'session "a\\x1b]0;x\\x07" not found\n'


def test_json_output_escapes_c1_and_del_losslessly(
    hostile_store: tuple[str, Path],
) -> None:
    url, directory = hostile_store
    result = run_cli("--store", url, "show", HOSTILE_ID, "--json", cwd=directory)
    assert not RAW.search(result.raw_stdout.replace(b"\xe2\x80\xae", b""))
    assert result.json()["session"]["id"] == HOSTILE_ID


def test_an_undecodable_id_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentlog.db'}"
    run_cli("--store", url, "demo", cwd=tmp_path).ok()
    main = run_cli("--store", url, "ls", "--json", cwd=tmp_path).json()["items"][-1]
    for args in (["show", "\udcff"], ["fork", main["id"], "--id", "\udcff"]):
        result = run_cli("--store", url, *args, cwd=tmp_path)
        assert result.returncode == 2, result
        assert "\\udcff is not valid UTF-8" in result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8"])
def test_output_survives_any_stdout_encoding(
    hostile_store: tuple[str, Path], encoding: str
) -> None:
    url, directory = hostile_store
    env = cli_env(PYTHONIOENCODING=encoding)
    for args in (["show", HOSTILE_ID], ["messages", HOSTILE_ID], ["ls"]):
        result = run_cli("--store", url, *args, cwd=directory, env=env)
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr


def test_a_password_in_a_store_url_is_never_printed(tmp_path: Path) -> None:
    secret = "s3cret-pw"
    for url in (
        f"postgresql://postgres:{secret}@127.0.0.1:99999/test",
        f"postgresql://postgres:{secret}@127.0.0.1:1/test?connect_timeout=1",
        f"postgresql://postgres:{secret}@127.0.0.1:5432/test?connect_timeout=abc",
    ):
        result = run_cli("--store", url, "ls", cwd=tmp_path)
        assert result.returncode in {1, 2}, result
        assert secret not in result.stdout + result.stderr, result
        assert "Traceback" not in result.stderr


def test_printable_escapes_exactly_the_controls() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("a\tb\nc", one_line=True) == "a\\tb\\nc"
    assert printable("\x1b\x07\x7f\x9b\x00\r") == "\\x1b\\x07\\x7f\\x9b\\x00\\r"
    assert printable("\udcff\u202e") == "\\udcff\\u202e"
    assert printable("é 中 🙂 \u200f") == "é 中 🙂 \u200f"


def test_mask_secrets_masks_every_url_password_and_setting() -> None:
    text = (
        "cannot reach postgresql://me:p%40ss@h:5/db and postgres://u:x@h/d; "
        "conninfo host=h password=hunter2 user=me"
    )
    masked = mask_secrets(text)
    assert "p%40ss" not in masked
    assert ":x@" not in masked
    assert "hunter2" not in masked
    assert "postgresql://me:***@h:5/db" in masked
    assert "sqlite:///a.db" in mask_secrets("sqlite:///a.db")


def test_the_store_file_holds_the_raw_data(hostile_store: tuple[str, Path]) -> None:
    """Escaping is for display only: the store keeps the bytes it was given."""
    _, directory = hostile_store
    with sqlite3.connect(directory / "agentlog.db") as connection:
        ids = {
            row[0]
            for row in connection.execute("SELECT originator_id FROM stored_events")
        }
    assert HOSTILE_ID in ids
