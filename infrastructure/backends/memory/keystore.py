"""The in-memory key store (``memory:``): keys in process memory, for the
in-memory store and tests."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from agentlog.infrastructure.keystore import KeyStore

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import Rewrap, RewrapView


class MemoryKeyStore(KeyStore):
    """Keys in process memory, for the in-memory store and tests."""

    def __init__(self, master: MasterKey) -> None:
        super().__init__(master, "memory:")
        self._rows: dict[str, bytes] = {}
        self._check: bytes | None = None
        self._view: bytes | None = None
        self._rows_lock = threading.Lock()

    def _select(self, session_id: str) -> bytes | None:
        with self._rows_lock:
            return self._rows.get(session_id)

    def _insert_or_ignore(
        self, session_id: str, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._rows_lock:
            if self._check is not None:
                current(self._check)
            return self._rows.setdefault(session_id, wrapped)

    def _view_key_or_insert(
        self, wrapped: bytes, current: Callable[[bytes], None]
    ) -> bytes:
        with self._rows_lock:
            if self._check is not None:
                current(self._check)
            if self._view is None:
                self._view = wrapped
            return self._view

    def _rewrap_all(
        self,
        rewrap: Rewrap,
        rewrap_view: RewrapView,
        check_value: bytes,
        current: Callable[[bytes], None],
    ) -> int:
        with self._rows_lock:
            if self._check is not None:
                current(self._check)
            rows = {i: rewrap(i, wrapped) for i, wrapped in self._rows.items()}
            view = None if self._view is None else rewrap_view(self._view)
            self._rows, self._check, self._view = rows, check_value, view
            return len(rows)

    def _delete(self, session_ids: Sequence[str]) -> int:
        with self._rows_lock:
            return sum(self._rows.pop(i, None) is not None for i in session_ids)

    def _check_value(self, candidate: bytes) -> bytes:
        with self._rows_lock:
            if self._check is None:
                self._check = candidate
            return self._check
