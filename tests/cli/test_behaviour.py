"""What a user runs into: a mistyped store, limits in the help, a crashed session to
fork, two writers racing for one id or one repair, a listing with long cells."""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING

import pytest

from tests.cli.conftest import agentlog_program, cli_env, run_cli
from tests.cli.test_writes import MULTI_TURN, SEED_ERA, read_log, write_log

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Store


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

ONLY_SQLITE = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
RACERS = 4

READS = [
    ["ls"],
    ["show", "x"],
    ["messages", "x"],
    ["surface", "x"],
    ["event", "x", "0"],
    ["trace", "x"],
    ["trace-event", "x", "0"],
    ["export", "x"],
    ["fork", "x"],
    ["repair", "x"],
]


@pytest.mark.parametrize("args", READS, ids=lambda args: args[0])
def test_a_read_never_creates_a_store(tmp_path: Path, args: list[str]) -> None:
    result = run_cli("--store", "sqlite:///typo.db", *args, cwd=tmp_path)
    assert result.returncode == 1, result
    assert result.stderr == (
        "no store at sqlite:///typo.db: typo.db does not exist "
        "(agentlog import or agentlog demo creates it)\n"
    )
    assert list(tmp_path.iterdir()) == []
    default = run_cli(*args, cwd=tmp_path)
    assert default.returncode == 1
    assert default.stderr.startswith("no store at sqlite:///agentlog.db")
    assert list(tmp_path.iterdir()) == []


def test_import_creates_the_store(tmp_path: Path) -> None:
    log = str(SEED_ERA / "multi-turn--session.jsonl")
    run_cli("--store", "sqlite:///new.db", "import", log, cwd=tmp_path).ok()
    assert (tmp_path / "new.db").is_file()


def test_the_help_says_the_limits(tmp_path: Path) -> None:
    event = run_cli("event", "--help", cwd=tmp_path).ok().stdout
    assert "0<=x<=50" in event
    assert "at most 50" in event
    listing = run_cli("ls", "--help", cwd=tmp_path).ok().stdout
    assert "1 to 10000" in listing


def test_an_oversized_seq_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("event", "x", "99999999999999999999999", cwd=tmp_path)
    assert result.returncode == 2
    assert "is not in the range 0<=x<=" in result.stderr
    assert "overflow" not in result.stderr.lower()
    assert "Traceback" not in result.stderr


def crash(store: Store, tmp_path: Path, session_id: str) -> str:
    """Import a copy of the multi-turn log cut inside its last turn."""
    store("import", str(SEED_ERA / "multi-turn--session.jsonl")).ok()
    lines = read_log(store("export", MULTI_TURN).ok().raw_stdout)
    last_start = max(i for i, line in enumerate(lines) if line["type"] == "turn/start")
    cut = next(
        i for i in range(last_start, len(lines)) if lines[i]["type"] == "step/start"
    )
    crashed = [{**lines[0], "id": session_id}, *lines[1 : cut + 2]]
    store("import", str(write_log(tmp_path / f"{session_id}.jsonl", crashed))).ok()
    return session_id


@ONLY_SQLITE
def test_fork_of_an_open_turn_says_to_repair(store: Store, tmp_path: Path) -> None:
    crashed = crash(store, tmp_path, "crashed")
    refused = store("fork", crashed)
    assert refused.returncode == 1
    assert refused.stderr.endswith(
        "its last turn is open (a writer crashed?); run "
        "`agentlog repair crashed` first, or fork with --repair\n"
    ), refused.stderr
    child = store("fork", crashed, "--repair", "--id", "after-repair").ok()
    assert child.stdout == "after-repair\n"
    assert (
        store("repair", crashed)
        .ok()
        .stdout.endswith("nothing to repair (no open turn)\n")
    )


def race(store: Store, *args: str) -> list[tuple[int, str]]:
    """Run the same command in RACERS processes at once."""
    processes = [
        subprocess.Popen(
            [*agentlog_program(), "--store", store.url, *args],
            cwd=store.cwd,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(RACERS)
    ]
    results = []
    for process in processes:
        _, stderr = process.communicate(timeout=180)
        results.append((process.returncode, stderr.decode()))
    return results


def test_racing_forks_to_one_id_lose_with_already_exists(store: Store) -> None:
    store("import", str(SEED_ERA / "multi-turn--session.jsonl")).ok()
    results = race(store, "fork", MULTI_TURN, "--id", "contested")
    winners = [code for code, _ in results if code == 0]
    assert len(winners) == 1, results
    for code, stderr in results:
        if code != 0:
            assert (code, stderr) == (1, 'session "contested" already exists\n')


def test_racing_repairs_all_succeed(store: Store, tmp_path: Path) -> None:
    crashed = crash(store, tmp_path, "crashed")
    results = race(store, "repair", crashed, "--json")
    assert [code for code, _ in results] == [0] * RACERS, results
    events = store("show", crashed, "--json").json()["events"]
    assert [event["type"] for event in events].count("turn/end") == len(
        [event for event in events if event["type"] == "turn/start"]
    )


@ONLY_SQLITE
@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_ls_keeps_every_column_and_truncates_long_cells(
    store: Store, tmp_path: Path, columns: str
) -> None:
    lines = read_log((SEED_ERA / "multi-turn--session.jsonl").read_bytes())
    long_id = "L" * 150
    store(
        "import",
        str(
            write_log(
                tmp_path / "long.jsonl", [{**lines[0], "id": long_id}, *lines[1:]]
            )
        ),
    ).ok()
    result = store("ls", env=cli_env(COLUMNS=columns)).ok()
    rows = result.stdout.splitlines()
    header = next(line for line in rows if "id" in line and "title" in line)
    for column in ("created", "events", "title"):
        assert column in header, result.stdout
    (row,) = [line for line in rows if "LLLL" in line]
    assert "…" in row
    assert str(len(lines) - 1) in row  # the event count is still shown
    assert all(len(line) <= int(columns) for line in rows)
    listed = json.loads(store("ls", "--json").stdout)["items"][0]["id"]
    assert listed == long_id


@pytest.mark.parametrize("store", ["postgres"], indirect=True)
def test_a_read_of_an_empty_postgres_schema_creates_nothing(store: Store) -> None:
    import psycopg

    from tests.conftest import pg_params

    for args in (["ls"], ["show", "x"], ["fork", "x"]):
        result = store(*args)
        assert result.returncode == 1, result
        assert result.stderr.startswith("no store at postgresql://"), result
        assert result.stderr.endswith(
            "it has no agentlog tables (agentlog import or agentlog demo creates it)\n"
        )
    schema = store.url.rpartition("schema=")[2]
    with psycopg.connect(**pg_params()) as connection:
        tables = connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchone()
    assert tables == (0,)
    store("import", str(SEED_ERA / "multi-turn--session.jsonl")).ok()
    assert store("ls", "--json").json()["items"][0]["id"] == MULTI_TURN
