"""Per-session encryption: the settings, the master key and a session's data key.

With ``AGENTLOG_ENCRYPTION=per-session`` every stored state (events, headers,
snapshots) of a session is sealed with AES-GCM under that session's own random
data key. Data keys are wrapped by the master key (``AGENTLOG_MASTER_KEY``) and
kept in a key store outside the event database
(:mod:`agentlog.infrastructure.keystore`), so forgetting a session's key makes
every copy of its rows unreadable, backups included. See docs/encryption.md.

AES-GCM comes from the ``cryptography`` package (PyCA, OpenSSL underneath): its
one-shot ``AESGCM`` takes associated data, which binds each sealed state to its
session, version and topic, and each wrapped key to its session. It is imported
by the first key made, not with this module: a store opened with encryption off
(``agentlog ls``, say) never loads it (docs/performance.md).
"""

from __future__ import annotations

import binascii
import os
import struct
from base64 import b64decode
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlog.domain.errors import EncryptionError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ENCRYPTION_ENV_VAR = "AGENTLOG_ENCRYPTION"
MASTER_KEY_ENV_VAR = "AGENTLOG_MASTER_KEY"
NEW_MASTER_KEY_ENV_VAR = "AGENTLOG_NEW_MASTER_KEY"
"""Read only by ``agentlog rotate-master-key``: the key to wrap with instead."""
KEYSTORE_ENV_VAR = "AGENTLOG_KEYSTORE"
PER_SESSION = "per-session"
OFF = frozenset({"", "off", "none", "no"})

KEY_SIZES = frozenset({16, 24, 32})
DATA_KEY_BYTES = 32
"""Data keys are AES-256, whatever the master key's size."""
NONCE_BYTES = 12
SEALED_PREFIX = b"\x00\x01"
"""Marks a sealed state (format 1). No plain state starts with NUL: JSON starts
with ``{``, and the library's compressors' frames with their own magic."""
OVERHEAD = len(SEALED_PREFIX) + NONCE_BYTES + 16
"""Bytes a sealed state adds: prefix, nonce and the GCM tag."""


def is_sealed(state: bytes) -> bool:
    return state[: len(SEALED_PREFIX)] == SEALED_PREFIX


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def _framed(*parts: bytes) -> bytes:
    """Length-prefixed parts: no two different tuples frame to the same bytes."""
    return b"".join(struct.pack(">I", len(part)) + part for part in parts)


def row_context(session_id: str, version: int, topic: str) -> bytes:
    """The associated data of a stored state: a sealed row opens only in place."""
    return _framed(b"agentlog-row-1", _text(session_id), b"%d" % version, _text(topic))


class ViewContext:
    """The associated data of one view column's sealed values: a value opens
    only in its own session's row, table and column (docs/encryption.md#the-views).
    The fixed parts are framed once; a row adds its session id."""

    __slots__ = ("_head", "_tail")

    def __init__(self, table: str, column: str) -> None:
        self._head = _framed(b"agentlog-view-1")
        self._tail = _framed(_text(table), _text(column))

    def __call__(self, session_id: str) -> bytes:
        return self._head + _framed(_text(session_id)) + self._tail


def view_context(session_id: str, table: str, column: str) -> bytes:
    """:class:`ViewContext` of one value (the same bytes, framed at once)."""
    return ViewContext(table, column)(session_id)


def _key_context(session_id: str) -> bytes:
    return _framed(b"agentlog-data-key-1", _text(session_id))


CHECK_CONTEXT = _framed(b"agentlog-master-key-check-1")
SEARCH_KEY_INFO = b"agentlog-search-tokens-1"
"""HKDF's ``info`` for a session's search key: a key of its own, never the
data key itself, so a token hash and a sealed row share no key material use."""


def search_key(data_key: bytes) -> bytes:
    """The session's search key: HKDF-SHA-256 of its data key (32 bytes).

    Derived, not stored: forgetting the data key forgets it, so the keyed
    hashes of an erased session's words can no longer be confirmed, not even
    from a backup with the current key store (docs/encryption.md)."""
    from cryptography.hazmat.primitives.hashes import SHA256
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=SHA256(), length=32, salt=None, info=SEARCH_KEY_INFO).derive(
        data_key
    )


VIEW_KEY_CONTEXT = _framed(b"agentlog-view-key-1")
VIEW_KEY_BYTES = 32
"""The store's view key: HMAC-SHA-256 of filter values (cwd, owner)."""


def keyed_hash(key: bytes, *parts: str) -> bytes:
    """HMAC-SHA-256 of the framed parts: equal inputs give equal tokens, and
    without the key a token tells nothing of its input."""
    import hmac  # with hashlib, OpenSSL's: only for a store with encryption on

    return hmac.digest(key, _framed(*(_text(part) for part in parts)), "sha256")


def _cipher(key: bytes) -> AESGCM:
    """AES-GCM under ``key`` (the ``cryptography`` package, imported here)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def _refused() -> tuple[type[Exception], ...]:
    """What a failed open raises: a wrong key or tag, or a truncated nonce.

    Called only while an error propagates (an ``except`` clause's expression).
    """
    from cryptography.exceptions import InvalidTag

    return (InvalidTag, ValueError)


class DataKey:
    """One session's AES-256-GCM key: seals and opens its stored states."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        self._aead = _cipher(key)

    @staticmethod
    def generate() -> bytes:
        return os.urandom(DATA_KEY_BYTES)

    def seal(self, context: bytes, plain: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return SEALED_PREFIX + nonce + self._aead.encrypt(nonce, plain, context)

    def open(self, context: bytes, sealed: bytes) -> bytes:
        """The plain state; ``ValueError`` if it was not sealed by this key here."""
        start = len(SEALED_PREFIX)
        nonce = sealed[start : start + NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, sealed[start + NONCE_BYTES :], context)
        except _refused():
            msg = "the sealed state does not open with its session's key"
            raise ValueError(msg) from None

    def __repr__(self) -> str:
        return "DataKey(***)"


class MasterKey:
    """Wraps and unwraps data keys (AES-GCM, the session id as associated data)."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if len(key) not in KEY_SIZES:
            msg = "the master key must be 16, 24 or 32 bytes"
            raise EncryptionError(msg)
        self._aead = _cipher(key)

    @classmethod
    def from_base64(
        cls, text: str | None, variable: str = MASTER_KEY_ENV_VAR
    ) -> MasterKey:
        """The key ``variable`` holds; the error names it and never repeats it."""
        if not text or not text.strip():
            msg = (
                f"{ENCRYPTION_ENV_VAR}={PER_SESSION} needs {variable}: the "
                "base64 of 16, 24 or 32 random bytes (see docs/encryption.md)"
            )
            raise EncryptionError(msg)
        try:
            key = b64decode(text.strip().encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            msg = f"{variable} is not valid base64"
            raise EncryptionError(msg) from None
        if len(key) not in KEY_SIZES:
            msg = f"{variable} decodes to {len(key)} bytes; it must be 16, 24 or 32"
            raise EncryptionError(msg)
        return cls(key)

    def wrap(self, session_id: str, data_key: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, data_key, _key_context(session_id))

    def unwrap(self, session_id: str, wrapped: bytes) -> bytes:
        try:
            return self._aead.decrypt(
                wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _key_context(session_id)
            )
        except _refused():
            msg = (
                f'the data key of session "{session_id}" does not open with the '
                "master key"
            )
            raise EncryptionError(msg) from None

    def wrap_view_key(self, view_key: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, view_key, VIEW_KEY_CONTEXT)

    def unwrap_view_key(self, wrapped: bytes) -> bytes:
        try:
            return self._aead.decrypt(
                wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], VIEW_KEY_CONTEXT
            )
        except _refused():
            msg = "the view key of the key store does not open with the master key"
            raise EncryptionError(msg) from None

    def check_value(self) -> bytes:
        """A value only this master key opens (kept in the key store)."""
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, b"", CHECK_CONTEXT)

    def opens(self, check_value: bytes) -> bool:
        try:
            self._aead.decrypt(
                check_value[:NONCE_BYTES], check_value[NONCE_BYTES:], CHECK_CONTEXT
            )
        except _refused():
            return False
        return True

    def __repr__(self) -> str:
        return "MasterKey(***)"


@dataclass(frozen=True)
class EncryptionSettings:
    """What ``AGENTLOG_ENCRYPTION=per-session`` needs: a master key and a key store.

    ``keystore`` is a URL (``sqlite:///path``, ``postgresql://…``, ``memory:``).
    """

    master_key: MasterKey
    keystore: str = field(repr=False)  # a PostgreSQL URL may hold a password
