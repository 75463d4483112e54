"""The key store's contract (``agentlog.infrastructure.keystore.KeyStore``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog import EncryptionError
from agentlog.infrastructure.crypto import DataKey, MasterKey, row_context
from tests.crypto.conftest import new_master_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.infrastructure.keystore import KeyStore

    OpenStore = Callable[[MasterKey], KeyStore]

CONTEXT = row_context("s", 2, "t")


def same_key(a: DataKey, b: DataKey) -> bool:
    try:
        return b.open(CONTEXT, a.seal(CONTEXT, b"x")) == b"x"
    except ValueError:
        return False


class KeyStoreCases:
    """``open_store(master)`` opens the backend's key store (the same store
    each time, except in memory); ``shared`` says whether two opens share it."""

    shared: bool = True

    def test_create_read_forget(self, open_store: OpenStore) -> None:
        store = open_store(MasterKey.from_base64(new_master_key()))
        try:
            assert store.data_key("s1") is None
            created = store.data_key("s1", create=True)
            assert created is not None
            again = store.data_key("s1")
            assert again is not None and same_key(created, again)
            other = store.data_key("s2", create=True)
            assert other is not None and not same_key(other, created)
            assert store.forget(["s1", "s1", "unknown"]) == 1
            assert store.data_key("s1") is None
            assert store.data_key("s2") is not None
            assert store.forget([]) == 0
        finally:
            store.close()

    def test_a_second_open_reads_the_same_keys_and_refuses_another_master(
        self, open_store: OpenStore
    ) -> None:
        if not self.shared:
            pytest.skip("this key store is one instance's own")
        master = MasterKey.from_base64(new_master_key())
        first = open_store(master)
        try:
            created = first.data_key("s1", create=True)
        finally:
            first.close()
        second = open_store(master)
        try:
            read = second.data_key("s1")
            assert created is not None and read is not None
            assert same_key(created, read)
        finally:
            second.close()
        with pytest.raises(EncryptionError, match="does not open the key store"):
            open_store(MasterKey.from_base64(new_master_key()))

    def test_rotate_keeps_the_data_keys_under_the_new_master(
        self, open_store: OpenStore
    ) -> None:
        old, new = (MasterKey.from_base64(new_master_key()) for _ in range(2))
        store = open_store(old)
        try:
            created = store.data_key("s1", create=True)
            assert store.rotate(new) == 1
            read = store.data_key("s1")
            assert created is not None and read is not None
            assert same_key(created, read)
        finally:
            store.close()
        if self.shared:
            reopened = open_store(new)
            try:
                again = reopened.data_key("s1")
                assert again is not None and same_key(created, again)
            finally:
                reopened.close()
            with pytest.raises(EncryptionError):
                open_store(old)

    def test_the_view_key_is_made_once_and_outlives_forgets_and_rotations(
        self, open_store: OpenStore
    ) -> None:
        """One view key per store (docs/encryption.md#the-views): every open
        reads the same, a forget never touches it, a rotation wraps it again."""
        old, new = (MasterKey.from_base64(new_master_key()) for _ in range(2))
        store = open_store(old)
        try:
            view_key = store.view_key()
            assert len(view_key) == 32
            assert store.view_key() == view_key
            store.data_key("s1", create=True)
            store.forget(["s1"])
            assert store.view_key() == view_key
            store.rotate(new)
            assert store.view_key() == view_key
        finally:
            store.close()
        if self.shared:
            reopened = open_store(new)
            try:
                assert reopened.view_key() == view_key
            finally:
                reopened.close()

    def test_preload_reads_many_keys_at_once_and_skips_the_missing(
        self, open_store: OpenStore
    ) -> None:
        master = MasterKey.from_base64(new_master_key())
        store = open_store(master)
        try:
            made = {i: store.data_key(i, create=True) for i in ("s1", "s2")}
            store.forget(["s2"])
            store.preload(["s1", "s2", "never"])
            assert store.data_key("s2") is None
            assert store.data_key("never") is None
            read = store.data_key("s1")
            assert read is not None and made["s1"] is not None
            assert same_key(made["s1"], read)
        finally:
            store.close()
