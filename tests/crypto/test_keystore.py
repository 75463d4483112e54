"""The key store: one key per session however many first users race, keys that
forget leaves nowhere in the store's files, and a master key checked at open."""

from __future__ import annotations

import base64
import multiprocessing
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentlog import EncryptionError
from agentlog.infrastructure.crypto import DataKey, MasterKey, row_context
from agentlog.infrastructure.key_store_setup import open_key_store
from agentlog.infrastructure.keystore import KeyStore
from tests.crypto.conftest import new_master_key

if TYPE_CHECKING:
    pass

CONTEXT = row_context("s", 2, "t")


def same_key(a: DataKey, b: DataKey) -> bool:
    return b.open(CONTEXT, a.seal(CONTEXT, b"x")) == b"x"


def test_create_read_forget(key_store: KeyStore) -> None:
    store = key_store
    assert store.data_key("s1") is None
    created = store.data_key("s1", create=True)
    assert created is not None
    again = store.data_key("s1")
    assert again is not None and same_key(created, again)
    other = store.data_key("s2", create=True)
    assert other is not None and not _opens(other, created)
    assert store.forget(["s1", "s1", "unknown"]) == 1
    assert store.data_key("s1") is None
    assert store.data_key("s2") is not None
    assert store.forget([]) == 0


def _opens(a: DataKey, b: DataKey) -> bool:
    try:
        return same_key(a, b)
    except ValueError:
        return False


def test_forget_reaches_a_second_handle_on_the_same_store(
    any_keystore_url: str, master_text: str
) -> None:
    if any_keystore_url == "memory:":
        pytest.skip("a memory key store is one process's own")
    master = MasterKey.from_base64(master_text)
    first, second = (
        open_key_store(any_keystore_url, master),
        open_key_store(any_keystore_url, master),
    )
    try:
        assert first.data_key("s", create=True) is not None
        first.forget(["s"])
        assert second.data_key("s") is None
    finally:
        first.close()
        second.close()


def test_a_wrong_master_key_is_refused_at_open(
    any_keystore_url: str, key_store: KeyStore, master_text: str
) -> None:
    if any_keystore_url == "memory:":
        pytest.skip("a memory key store is one process's own")
    other = new_master_key()
    with pytest.raises(EncryptionError, match="does not open the key store") as caught:
        open_key_store(any_keystore_url, MasterKey.from_base64(other))
    assert other not in str(caught.value) and master_text not in str(caught.value)


def test_concurrent_first_use_in_threads_converges_on_one_key(
    any_keystore_url: str, key_store: KeyStore, master_text: str
) -> None:
    stores = [key_store]
    if any_keystore_url != "memory:":
        stores.append(
            open_key_store(any_keystore_url, MasterKey.from_base64(master_text))
        )
    barrier = threading.Barrier(8)
    keys: list[DataKey | None] = [None] * 8

    def first_use(i: int) -> None:
        barrier.wait()
        keys[i] = stores[i % len(stores)].data_key("new", create=True)

    threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for extra in stores[1:]:
        extra.close()
    assert all(key is not None for key in keys)
    assert all(same_key(keys[0], key) for key in keys)  # type: ignore[arg-type]


def _seal_in_process(url: str, master_text: str, start: object) -> None:
    store = open_key_store(url, MasterKey.from_base64(master_text))
    start.wait()  # type: ignore[attr-defined]
    key = store.data_key("raced", create=True)
    assert key is not None
    Path(
        url.removeprefix("sqlite:///") + f".{multiprocessing.current_process().pid}"
    ).write_bytes(key.seal(CONTEXT, b"from a process"))
    store.close()


@pytest.mark.slow
def test_concurrent_first_use_in_processes_converges_on_one_key(
    tmp_path: Path, master_text: str
) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    open_key_store(url, MasterKey.from_base64(master_text)).close()
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    processes = [
        context.Process(target=_seal_in_process, args=(url, master_text, start))
        for _ in range(3)
    ]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    store = open_key_store(url, MasterKey.from_base64(master_text))
    key = store.data_key("raced")
    store.close()
    assert key is not None
    sealed = sorted(tmp_path.glob("keys.db.*[0-9]"))
    assert len(sealed) == 3
    for path in sealed:
        assert key.open(CONTEXT, path.read_bytes()) == b"from a process"


def test_forgotten_keys_leave_no_bytes_in_the_sqlite_files(
    tmp_path: Path, master_text: str
) -> None:
    path = tmp_path / "keys.db"
    store = open_key_store(f"sqlite:///{path}", MasterKey.from_base64(master_text))
    reader = sqlite3.connect(path)  # a second connection, as another process would
    try:
        for i in range(50):
            store.data_key(f"s{i}", create=True)
        wrapped = {
            session_id: bytes(blob)
            for session_id, blob in reader.execute(
                "SELECT session_id, wrapped_key FROM agentlog_data_keys"
            )
        }
        files = [path, Path(f"{path}-wal")]
        before = b"".join(f.read_bytes() for f in files if f.exists())
        assert wrapped["s7"] in before  # the search can find it
        assert store.forget(["s7", "s8"]) == 2
        after = b"".join(f.read_bytes() for f in files if f.exists())
        assert wrapped["s7"] not in after and wrapped["s8"] not in after
        assert wrapped["s9"] in after
    finally:
        reader.close()
        store.close()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "needs AGENTLOG_MASTER_KEY"),
        ("", "needs AGENTLOG_MASTER_KEY"),
        ("not base64!", "not valid base64"),
        (base64.b64encode(b"k" * 20).decode(), "decodes to 20 bytes"),
        ("é", "not valid base64"),
    ],
)
def test_a_malformed_master_key_is_typed(text: str | None, reason: str) -> None:
    with pytest.raises(EncryptionError, match=reason) as caught:
        MasterKey.from_base64(text)
    if text:
        assert text not in str(caught.value)
    assert repr(MasterKey.from_base64(new_master_key())) == "MasterKey(***)"
