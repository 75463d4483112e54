"""The key store: each session's wrapped data key, kept outside the event database.

:meth:`KeyStore.data_key` returns a session's key (creating it on request: an
insert-or-ignore, then a read, so concurrent first uses in any number of threads
or processes converge on one key); :meth:`KeyStore.forget` deletes keys, after
which every copy of those sessions' rows, backups included, stays sealed.

Three backends, chosen by URL (each in ``backends/<name>/keystore.py``):
``memory:``, ``sqlite:///path`` (WAL,
``secure_delete`` and a truncating checkpoint after each forget, so the deleted
wrapped keys are gone from the file and its WAL) and ``postgresql://…?schema=…``
(a table in that schema). Each store holds one check value of the master key, so
a wrong master key is refused when the store is opened, not at the first read.
:meth:`KeyStore.rotate` wraps every key with a new master key in one transaction;
a key is only ever created under the master key the check value names, so a
process still on the old key cannot add keys nobody else can open.
Opening one by URL is :mod:`~agentlog.infrastructure.key_store_setup`'s job
(it needs the backends, which need this base class). See docs/encryption.md.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING

from agentlog.domain.errors import EncryptionError
from agentlog.infrastructure.crypto import (
    VIEW_KEY_BYTES,
    DataKey,
    MasterKey,
    search_key,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    Rewrap = Callable[[str, bytes], bytes]
    """``(session id, wrapped key) -> the key wrapped by the new master key``."""
    RewrapView = Callable[[bytes], bytes]
    """``wrapped view key -> the view key wrapped by the new master key``."""

KEYS_TABLE = "agentlog_data_keys"
CHECK_TABLE = "agentlog_master_key_check"
VIEW_KEY_TABLE = "agentlog_view_key"
"""One row: the store's view key (filter tokens of the views), wrapped."""
CACHE_SIZE = 4096
"""Unwrapped keys kept in memory per process (least recently used go first)."""
SEARCH_CACHE_SIZE = 65_536
"""Search keys kept in memory per process: a hashed search needs the key of
every session it may match, so the cache holds more than :data:`CACHE_SIZE`
(32 bytes each, about 8 MB when full)."""


class KeyStore(ABC):
    """Wrapped data keys by session id; unwrapped ones cached in this process.

    Thread-safe. The backend classes implement four small steps; the rules
    (wrap, unwrap, cache, converge on one key) live here once.
    """

    def __init__(self, master: MasterKey, display: str) -> None:
        self.display = display
        self._master = master
        self._cache: OrderedDict[str, DataKey] = OrderedDict()
        self._search: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._forgets = 0
        self._view_key: bytes | None = None

    def check_master_key(self) -> None:
        """Refuse a master key other than the one this store was created with."""
        if not self._master.opens(self._check_value(self._master.check_value())):
            msg = (
                f"AGENTLOG_MASTER_KEY does not open the key store {self.display}: "
                "it was made with, or rotated to, another master key"
            )
            raise EncryptionError(msg)

    def data_key(self, session_id: str, *, create: bool = False) -> DataKey | None:
        """The session's data key; ``None`` if it has none (never had, or forgotten).

        ``create`` makes one when there is none; when several callers create at
        once, every one of them gets the key that was stored first.
        """
        with self._lock:
            key = self._cache.get(session_id)
            if key is not None:
                self._cache.move_to_end(session_id)
                return key
            forgets = self._forgets
        wrapped = self._select(session_id)
        if wrapped is None:
            if not create:
                return None
            fresh = self._master.wrap(session_id, DataKey.generate())
            wrapped = self._insert_or_ignore(session_id, fresh, self._current)
        key = DataKey(self._master.unwrap(session_id, wrapped))
        with self._lock:
            # A forget since the read may have deleted this very key: don't cache.
            if self._forgets == forgets:
                self._cache[session_id] = key
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return key

    def preload(self, session_ids: Iterable[str]) -> None:
        """Cache the data keys of these sessions that are not cached, read in
        one statement (a page of sealed view rows opens many sessions' rows)."""
        with self._lock:
            missing = [i for i in dict.fromkeys(session_ids) if i not in self._cache]
            forgets = self._forgets
        if not missing:
            return
        stored = self._select_many(missing)
        keys = {i: DataKey(self._master.unwrap(i, w)) for i, w in stored.items()}
        with self._lock:
            # A forget since the read may have deleted these very keys.
            if self._forgets == forgets:
                self._cache.update(keys)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)

    def search_keys(
        self, session_ids: Iterable[str], *, create: bool = False
    ) -> dict[str, bytes]:
        """Each session's search key (:func:`~agentlog.infrastructure.crypto.search_key`
        of its data key); a session without a data key is left out, unless
        ``create`` makes it one (as :meth:`data_key` does).

        The keys not cached are read in one statement: a hashed search asks
        for the keys of every session it may match (docs/encryption.md)."""
        ids = list(dict.fromkeys(session_ids))
        found: dict[str, bytes] = {}
        missing: list[str] = []
        with self._lock:
            for session_id in ids:
                key = self._search.get(session_id)
                if key is None:
                    missing.append(session_id)
                else:
                    self._search.move_to_end(session_id)
                    found[session_id] = key
            forgets = self._forgets
        if not missing:
            return found
        stored = self._select_many(missing)
        derived: dict[str, bytes] = {}
        for session_id in missing:
            wrapped = stored.get(session_id)
            if wrapped is None:
                if not create:
                    continue
                fresh = self._master.wrap(session_id, DataKey.generate())
                wrapped = self._insert_or_ignore(session_id, fresh, self._current)
            derived[session_id] = search_key(self._master.unwrap(session_id, wrapped))
        with self._lock:
            # A forget since the read may have deleted these very keys.
            if self._forgets == forgets:
                self._search.update(derived)
                while len(self._search) > SEARCH_CACHE_SIZE:
                    self._search.popitem(last=False)
        found.update(derived)
        return found

    def view_key(self) -> bytes:
        """The store's view key (made on first use; every process converges on
        the one stored first). It keys the views' filter tokens, so it is never
        forgotten: only rotated with the master key (docs/encryption.md)."""
        with self._lock:
            if self._view_key is not None:
                return self._view_key
        fresh = self._master.wrap_view_key(os.urandom(VIEW_KEY_BYTES))
        key = self._master.unwrap_view_key(
            self._view_key_or_insert(fresh, self._current)
        )
        with self._lock:
            self._view_key = key
        return key

    def forget(self, session_ids: Iterable[str]) -> int:
        """Delete these sessions' keys (here and in the store); how many existed."""
        ids = list(dict.fromkeys(session_ids))
        with self._lock:
            self._forgets += 1
            for session_id in ids:
                self._cache.pop(session_id, None)
                self._search.pop(session_id, None)
        return self._delete(ids) if ids else 0

    def rotate(self, new_master: MasterKey) -> int:
        """Wrap every data key with ``new_master`` instead, in one transaction.

        Returns how many keys were wrapped again. The data keys (and so every
        stored row) stay as they are; from then on only ``new_master`` opens
        this store (docs/encryption.md#rotating-the-master-key).
        """
        old = self._master

        def rewrap(session_id: str, wrapped: bytes) -> bytes:
            return new_master.wrap(session_id, old.unwrap(session_id, wrapped))

        def rewrap_view(wrapped: bytes) -> bytes:
            return new_master.wrap_view_key(old.unwrap_view_key(wrapped))

        count = self._rewrap_all(
            rewrap, rewrap_view, new_master.check_value(), self._current
        )
        self._master = new_master
        return count

    def _current(self, check_value: bytes) -> None:
        """Refuse to wrap under a master key the store's check value does not name."""
        if not self._master.opens(check_value):
            msg = (
                f"the master key of the key store {self.display} was rotated: "
                "restart with the new AGENTLOG_MASTER_KEY"
            )
            raise EncryptionError(msg)

    def close(self) -> None:
        with self._lock:
            self._cache.clear()
            self._search.clear()

    # The backend's steps.

    @abstractmethod
    def _select(self, session_id: str) -> bytes | None:
        """The session's wrapped key, if stored."""

    def _select_many(self, session_ids: Sequence[str]) -> dict[str, bytes]:
        """The stored wrapped keys of these sessions (one read if the backend
        can; a session without a key is left out)."""
        found = {}
        for session_id in session_ids:
            wrapped = self._select(session_id)
            if wrapped is not None:
                found[session_id] = wrapped
        return found

    @abstractmethod
    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        """Store ``wrapped`` unless the session has a key; return the stored one.

        ``current(check value)`` runs first, in the same transaction, and raises
        if the store's master key is not the one ``wrapped`` was made with."""

    @abstractmethod
    def _view_key_or_insert(
        self, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        """Store ``wrapped`` as the view key unless there is one; return the
        stored one (``current`` as for :meth:`_insert_or_ignore`)."""

    @abstractmethod
    def _rewrap_all(
        self,
        rewrap: Rewrap,
        rewrap_view: RewrapView,
        check_value: bytes,
        current: Callable[[bytes], None],
    ) -> int:
        """In one transaction: ``current(stored check value)``, every wrapped key
        replaced by ``rewrap``'s (the view key's, if any, by ``rewrap_view``'s),
        and ``check_value`` stored; how many data keys."""

    @abstractmethod
    def _delete(self, session_ids: Sequence[str]) -> int:
        """Delete the keys (durably, leaving no copy in the store's files)."""

    @abstractmethod
    def _check_value(self, candidate: bytes) -> bytes:
        """The stored master-key check value, storing ``candidate`` if none."""
