"""Search tokens as keyed hashes, one key per session (docs/encryption.md).

With per-session encryption the search index must hold no session's words: a
copy of the database alone must not show them, and a copy taken before an
erase, read with the key store as it is after, must not confirm a guessed word
of the erased session. So each token of ``domain.search_text.tokens`` (CJK
bigrams included) is stored as a keyed BLAKE2b hash under the session's
*search key*, derived from its data key (``crypto.search_key``): erasing forgets
the data key, and with it the only way to compute that session's hashes.

This is one step between the tokenizer and a backend's index, so neither
changes: the index is fed hashed tokens instead of tokens, in the same
positions, and a query's phrase is hashed once per session it may match.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

HASH_BYTES = 8
"""64 bits: two different tokens of one session hash alike with a chance of
about one in 2**64 per pair, so a phrase matches a document that lacks it
about never (a hit is then cut from its opened event, and would show no
highlight). Spelled as 16 hex digits: one FTS5 token that ``unicode61``
neither splits nor folds, and one ``terms`` element (base32 would be 13
characters, but costs four times as long to spell in Python)."""


def hashed_token(key: bytes, token: str) -> str:
    """One token as the index stores it under a session's search key."""
    raw = token.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, key=key, digest_size=HASH_BYTES).hexdigest()


class TokenHasher:
    """One session's token hashing, remembering the tokens it has hashed
    (a document repeats its words; a batch repeats a session's)."""

    __slots__ = ("_key", "_seen")

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._seen: dict[str, str] = {}

    def __call__(self, tokens: Sequence[str]) -> list[str]:
        seen = self._seen
        out = []
        for token in tokens:
            found = seen.get(token)
            if found is None:
                found = seen[token] = hashed_token(self._key, token)
            out.append(found)
        return out


class SearchKeys(Protocol):
    """Where the sessions' search keys come from (the key store)."""

    def search_keys(
        self, session_ids: Iterable[str], *, create: bool = False
    ) -> Mapping[str, bytes]: ...

    def forget(self, session_ids: Iterable[str]) -> int: ...


class TokenHashing:
    """The hashing step of an encrypted store's search index."""

    def __init__(self, keys: SearchKeys) -> None:
        self._keys = keys

    def hashers(
        self, session_ids: Iterable[str], *, create: bool = False
    ) -> dict[str, TokenHasher]:
        """A hasher per session with a key (``create``: every session; the
        index makes a key for a session stored before encryption was on)."""
        keys = self._keys.search_keys(session_ids, create=create)
        return {session_id: TokenHasher(key) for session_id, key in keys.items()}

    def has_key(self, session_id: str) -> bool:
        """Whether the session's phrases can be hashed (its key not forgotten)."""
        return bool(self._keys.search_keys([session_id]))

    def forget(self, session_ids: Iterable[str]) -> None:
        """Forget these (erased) sessions' keys."""
        self._keys.forget(session_ids)

    def phrases(
        self, session_ids: Iterable[str], phrase: Sequence[str]
    ) -> dict[str, list[str]]:
        """The phrase as each session's index holds it. A session without a
        key (forgotten) is left out: nothing of it can match."""
        keys = self._keys.search_keys(session_ids)
        return {
            session_id: [hashed_token(key, token) for token in phrase]
            for session_id, key in keys.items()
        }
