"""``import`` and ``export`` at the command line: stdin, zstd, --new-id, file lines.

Every test runs the installed console script in a real process (issue 12).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from typing import TYPE_CHECKING

import pytest

from agentlog.domain.json import dumps
from tests.cli.conftest import agentlog_program, cli_env
from tests.cli.test_writes import MULTI_TURN, ONLY_SQLITE, SEED_ERA, ZSTD_MAGIC
from tests.formats.samples import header_line, lines, turn1

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import Store


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

MULTI_TURN_FILE = SEED_ERA / "multi-turn--session.jsonl"


def piped(store: Store, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``agentlog --store URL ARGS`` with ``data`` on its standard input."""
    return subprocess.run(
        [*agentlog_program(), "--store", store.url, *args],
        input=data,
        cwd=store.cwd,
        env=cli_env(),
        capture_output=True,
        timeout=180,
        check=False,
    )


def test_import_dash_reads_standard_input(store: Store) -> None:
    done = piped(store, MULTI_TURN_FILE.read_bytes(), "import", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == MULTI_TURN + "\n"
    assert store("export", MULTI_TURN).ok().raw_stdout == MULTI_TURN_FILE.read_bytes()


def test_re_importing_an_export_needs_new_id(store: Store, tmp_path: Path) -> None:
    store("import", str(MULTI_TURN_FILE)).ok()
    exported = tmp_path / "again.jsonl"
    store("export", MULTI_TURN, "-o", str(exported)).ok()
    again = store("import", str(exported))
    assert again.returncode == 1
    assert again.stderr == (
        f'{exported}: session "{MULTI_TURN}" already exists; use --new-id to import'
        " it as a new session\n"
    )
    fresh = store("import", "--new-id", str(exported)).ok()
    new_id = fresh.stdout.strip()
    assert uuid.UUID(new_id).version == 4
    assert new_id != MULTI_TURN
    body = store("export", new_id).ok().raw_stdout.split(b"\n", 1)[1]
    assert body == exported.read_bytes().split(b"\n", 1)[1]


@ONLY_SQLITE
def test_new_id_rewrites_the_parent_of_a_child_imported_with_it(
    store: Store, tmp_path: Path
) -> None:
    parent = tmp_path / "parent.jsonl"
    child = tmp_path / "child.jsonl"
    parent.write_bytes(header_line(id="p", delegationDepth=0) + b"\n" + lines(*turn1()))
    child.write_bytes(
        header_line(id="c", parentSession="p", seedLength=6, delegationDepth=1)
        + b"\n"
        + lines(*turn1())
    )
    outsider = tmp_path / "outsider.jsonl"
    outsider.write_bytes(
        header_line(id="o", parentSession="elsewhere", delegationDepth=0)
        + b"\n"
        + lines(*turn1())
    )
    # The child comes first: the mapping is made before any import.
    result = store(
        "import", "--new-id", "--json", str(child), str(parent), str(outsider)
    )
    child_id, parent_id, outsider_id = (entry["sessionId"] for entry in result.json())
    assert len({child_id, parent_id, outsider_id, "p", "c", "o"}) == 6
    exported = store("export", child_id).ok().raw_stdout
    header = json.loads(exported.split(b"\n", 1)[0])
    assert header["id"] == child_id
    assert header["parentSession"] == parent_id
    outside = json.loads(store("export", outsider_id).ok().raw_stdout.split(b"\n")[0])
    assert outside["parentSession"] == "elsewhere"


@ONLY_SQLITE
@pytest.mark.parametrize("suffix", [".zst", ".zstd"])
def test_export_to_zst_compresses_and_imports_back(
    store: Store, tmp_path: Path, suffix: str
) -> None:
    store("import", str(MULTI_TURN_FILE)).ok()
    target = tmp_path / f"copy.jsonl{suffix}"
    written = store("export", MULTI_TURN, "-o", str(target)).ok()
    assert written.stderr.startswith(f"wrote {target} (")
    assert target.read_bytes().startswith(ZSTD_MAGIC)
    again = store("import", "--new-id", str(target)).ok().stdout.strip()
    assert (
        store("export", again).ok().raw_stdout.split(b"\n", 1)[1]
        == (MULTI_TURN_FILE.read_bytes().split(b"\n", 1)[1])
    )


@ONLY_SQLITE
@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd tool is not installed")
def test_a_file_the_zstd_tool_wrote_imports(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "multi.jsonl.zst"
    subprocess.run(["zstd", "-q", "-o", str(target), str(MULTI_TURN_FILE)], check=True)
    assert store("import", str(target)).ok().stdout == MULTI_TURN + "\n"
    if shutil.which("pzstd"):
        multi = tmp_path / "multi.pz.zst"
        subprocess.run(
            ["pzstd", "-q", "-p", "2", "-o", str(multi), str(MULTI_TURN_FILE)],
            check=True,
        )
        assert store("import", "--new-id", str(multi)).ok().stdout.strip()


@ONLY_SQLITE
def test_import_errors_name_the_file_line(store: Store, tmp_path: Path) -> None:
    events = turn1()
    events[2]["surfaceOp"] = "append"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(header_line(delegationDepth=0) + b"\n" + lines(*events))
    result = store("import", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}: line 4: ")
    assert len(result.stderr.splitlines()) == 1
    gap = tmp_path / "gap.jsonl"
    del events[2]["surfaceOp"]
    del events[3]["seq"]
    gap.write_bytes(header_line(delegationDepth=0) + b"\n" + lines(*events))
    assert store("import", str(gap)).stderr == (
        f"{gap}: corrupt session log: seq gap in committed region at line 5"
        " (expected 3, got undefined)\n"
    )


def test_a_header_only_log_is_listed_with_zero_events(
    store: Store, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(
        dumps(
            {
                "type": "session",
                "version": 0,
                "id": "e",
                "createdAt": 5,
                "delegationDepth": 0,
            }
        )
        + b"\n"
    )
    assert store("import", str(empty)).ok().stdout == "e\n"
    (item,) = store("ls", "--json").json()["items"]
    assert (item["id"], item["eventCount"]) == ("e", 0)
    assert store("export", "e").ok().raw_stdout == empty.read_bytes()


@ONLY_SQLITE
def test_a_failed_export_leaves_no_partial_file(store: Store, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_bytes(b"earlier\n")
    result = store("export", "missing", "-o", str(target))
    assert result.returncode == 1
    assert target.read_bytes() == b"earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
