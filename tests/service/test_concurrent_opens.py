"""Safe concurrent opens: many threads and processes opening fresh stores at once.

SQLite does not wait on ``PRAGMA journal_mode=WAL``: without a retry about 0.4%
of simultaneous first opens of a file failed with "database is locked".
"""

from __future__ import annotations

import multiprocessing
import threading
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import StoreUnavailableError

if TYPE_CHECKING:
    from pathlib import Path

FILES = 20
OPENERS = 8
REPETITIONS = 10


def open_and_close(url: str) -> str:
    try:
        Sessions(store=url).close()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return ""


def open_all_at_once(urls: list[str]) -> list[str]:
    """Every url opened by ``OPENERS`` threads released together."""
    start = threading.Barrier(len(urls) * OPENERS)
    failures: list[str] = []

    def opener(url: str) -> None:
        start.wait()
        failure = open_and_close(url)
        if failure:
            failures.append(failure)

    threads = [
        threading.Thread(target=opener, args=(url,))
        for url in urls
        for _ in range(OPENERS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    return failures


def test_threads_opening_fresh_sqlite_files_at_once_all_succeed(
    tmp_path: Path,
) -> None:
    urls = [f"sqlite:///{tmp_path}/fresh-{n}.db" for n in range(4)]
    assert open_all_at_once(urls) == []


@pytest.mark.slow
def test_20_fresh_files_by_8_threads_ten_times(tmp_path: Path) -> None:
    for repetition in range(REPETITIONS):
        urls = [f"sqlite:///{tmp_path}/r{repetition}-{n}.db" for n in range(FILES)]
        assert open_all_at_once(urls) == []


@pytest.mark.slow
def test_20_fresh_files_by_8_processes_ten_times(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    with context.Pool(OPENERS) as pool:
        for repetition in range(REPETITIONS):
            urls = [
                f"sqlite:///{tmp_path}/p{repetition}-{n}.db"
                for n in range(FILES)
                for _ in range(OPENERS)
            ]
            failures = [f for f in pool.map(open_and_close, urls, 1) if f]
            assert failures == []


def test_a_store_that_cannot_open_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "not-a-db.db").write_bytes(b"this is not an SQLite file" * 100)
    with pytest.raises(StoreUnavailableError, match="cannot open the store"):
        Sessions(store=f"sqlite:///{tmp_path}/not-a-db.db")
