"""Sealed views: with per-session encryption, a view row's content is sealed.

A copy of the views' tables must reveal no session content
(docs/encryption.md#the-views). So, when encryption is on, every content column
of a row (the listing's header, first prompt and title; a title event's data;
the lineage's header) is stored sealed with AES-GCM under the row's session
data key, its session id, table and column as associated data; forgetting the
key (an erase) kills these columns in every copy. The equality filters' columns
(``cwd``, ``owner``) hold keyed hashes under the store's *view key*, so a scoped
page is still selected through an index; their values are read back from the
opened header. Ids, times, counts and seqs stay plain: they order the rows.

:class:`ViewKeys` is where every view gets its keys (the session's data key,
the view key's tokens), all from the application's one key store (the search
index derives its keys from the same ``KeyStore``). ``SealingFactory``
(``views.sealing_factory``) gives the views of our factories those keys and
picks their sealed class (own tables, own position: the log is folded again
into them, and the plaintext tables are dropped).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from agentlog.application.view_rows import (
    LineageRow,
    ListingRow,
    TitleRow,
    row_values,
)
from agentlog.domain.json import dumps, loads
from agentlog.infrastructure.crypto import ViewContext, keyed_hash
from agentlog.infrastructure.views import decode_text, encode_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from agentlog.infrastructure.crypto import DataKey
    from agentlog.infrastructure.keystore import KeyStore

log = logging.getLogger(__name__)

TRow = TypeVar("TRow")
TView = TypeVar("TView", bound=type)

SEALED_SUFFIX = "_sealed"


class ViewKeys:
    """The keys views seal with, all from the application's one key store.

    Thread-safe as the key store is; data keys are cached there.
    """

    def __init__(self, store: KeyStore) -> None:
        self.store = store

    def sealing_key(self, session_id: str) -> DataKey:
        """The session's data key, made if it has none (a session stored before
        encryption was on gets one for its view rows)."""
        key = self.store.data_key(session_id, create=True)
        assert key is not None
        return key

    def preload(self, session_ids: Iterable[str]) -> None:
        """Read the uncached data keys of these sessions at once."""
        self.store.preload(session_ids)

    def opening_key(self, session_id: str) -> DataKey | None:
        """The session's data key; ``None`` when it was forgotten (or never made)."""
        return self.store.data_key(session_id)

    def token(self, column: str, value: str) -> bytes:
        """The filter token of ``value`` in ``column`` (HMAC-SHA-256 under the
        store's view key): equal values give equal tokens in every session."""
        return keyed_hash(self.store.view_key(), column, value)


@dataclasses.dataclass(frozen=True, slots=True)
class Sealing:
    """Which columns of a row type are sealed, and which hold filter tokens
    (a token column's value is the header's field of the same name)."""

    sealed: tuple[str, ...]
    tokens: tuple[str, ...] = ()


SEALINGS: Mapping[type[Any], Sealing] = {
    ListingRow: Sealing(("header", "first_prompt", "title"), ("cwd", "owner")),
    TitleRow: Sealing(("data",)),
    LineageRow: Sealing(("header",)),
}


class RowSeal(Generic[TRow]):
    """Seals and opens the rows of one view table."""

    def __init__(self, row_type: type[TRow], table: str, keys: ViewKeys) -> None:
        self.keys = keys
        self._row_type = row_type
        sealing = SEALINGS[row_type]
        kinds: Mapping[str, str] = row_type.KINDS  # type: ignore[attr-defined]
        names = [field.name for field in dataclasses.fields(row_type)]  # type: ignore[arg-type]
        self._table = table
        self._sealed = [
            (names.index(name), name, kinds[name] == "json", ViewContext(table, name))
            for name in sealing.sealed
        ]
        self._tokens = [(names.index(name), name) for name in sealing.tokens]
        self._header = names.index("header") if "header" in names else None

    def seal(self, row: TRow) -> TRow:
        """The row as stored: content sealed, filter columns as tokens."""
        values = list(row_values(row))
        session_id: str = values[0]
        key = self.keys.sealing_key(session_id)
        for at, _, is_json, context in self._sealed:
            value = values[at]
            if value is not None:
                plain = dumps(value) if is_json else encode_text(value)
                values[at] = key.seal(context(session_id), plain)
        for at, name in self._tokens:
            value = values[at]
            if value is not None:
                values[at] = self.keys.token(name, value)
        return self._row_type(*values)

    def open(self, row: TRow) -> TRow | None:
        """The row as folded; ``None`` when its session's key is gone (an erased
        session in a copy from before the erase) or a column does not open."""
        values = list(row_values(row))
        session_id: str = values[0]
        key = self.keys.opening_key(session_id)
        if key is None:
            return None
        for at, name, is_json, context in self._sealed:
            sealed = values[at]
            if sealed is None:
                continue
            try:
                plain = key.open(context(session_id), bytes(sealed))
            except ValueError:
                log.warning(
                    "view %s skips the row of session %r: its %s does not open",
                    self._table,
                    session_id,
                    name,
                )
                return None
            values[at] = loads(plain) if is_json else decode_text(plain)
        if self._tokens:
            header = None if self._header is None else values[self._header]
            for at, name in self._tokens:
                value = header.get(name) if isinstance(header, dict) else None
                values[at] = value if type(value) is str else None
        return self._row_type(*values)

    def open_all(self, rows: list[TRow]) -> list[TRow]:
        """:meth:`open` of each row, their keys read at once; a row that does
        not open is left out."""
        if len(rows) > 1:
            self.keys.preload(row.session_id for row in rows)  # type: ignore[attr-defined]
        return [opened for row in rows if (opened := self.open(row)) is not None]

    def token_columns(self, pairs: list[tuple[str, str | None]]) -> list[Any]:
        """A scope's ``(column, value)`` equalities as stored: token columns'
        values as their tokens (``None`` stays NULL)."""
        tokens = {name for _, name in self._tokens}
        return [
            (name, self.keys.token(name, value))
            if name in tokens and value is not None
            else (name, value)
            for name, value in pairs
        ]


class SealableView:
    """A view whose rows can be sealed: its sealed class (:func:`sealed_class`)
    stores ``RowSeal.seal(row)`` and reads back ``RowSeal.open(row)``."""

    sealed: ClassVar[bool] = False
    row_type: ClassVar[type[Any]]
    table_name: ClassVar[str]
    plain_table_name: ClassVar[str] = ""
    """In a sealed class: the plaintext class's table, dropped when it opens."""
    _row_seal: RowSeal[Any] | None = None

    @classmethod
    def can_seal(cls) -> bool:
        """Whether this view's rows have a sealing (``SEALINGS``)."""
        return getattr(cls, "row_type", None) in SEALINGS

    def use_keys(self, keys: ViewKeys) -> None:
        """Seal with these keys (a sealed class cannot read or write without)."""
        self._row_seal = RowSeal(self.row_type, self.table_name, keys)

    @property
    def row_seal(self) -> RowSeal[Any]:
        if self._row_seal is None:
            msg = f"the sealed view {self.table_name} was given no keys"
            raise RuntimeError(msg)
        return self._row_seal

    def sealed_columns(self) -> frozenset[str]:
        """Columns stored as raw bytes (sealed content, tokens) in a sealed class."""
        if not self.sealed:
            return frozenset()
        sealing = SEALINGS[self.row_type]
        return frozenset(sealing.sealed + sealing.tokens)

    def scope_pairs(self, pairs: list[tuple[str, str | None]]) -> list[Any]:
        """A scope's equalities as this view stores them."""
        return self.row_seal.token_columns(pairs) if self.sealed else pairs


@functools.cache
def sealed_class(view_class: TView) -> TView:
    """``view_class`` with sealed rows, in tables and a position of its own.

    Its own tables because a table of one kind of row is never mixed with the
    other (a plaintext row is never read as sealed, nor a token compared with a
    plaintext ``cwd``); its own position, so turning encryption on folds the
    log again into the sealed tables.
    """
    if (
        not issubclass(view_class, SealableView)
        or not view_class.can_seal()
        or view_class.sealed
    ):
        return view_class
    attributes = {
        "sealed": True,
        "table_name": view_class.table_name + SEALED_SUFFIX,
        "plain_table_name": view_class.table_name,
        "view_name": getattr(view_class, "view_name", "") + ".sealed",
        "__module__": view_class.__module__,
        "__doc__": view_class.__doc__,
    }
    return type(f"Sealed{view_class.__name__}", (view_class,), attributes)  # type: ignore[return-value]
