"""Which key store the environment names, opening it, rotating its master key.

Apart from :mod:`~agentlog.infrastructure.keystore` and
:mod:`~agentlog.infrastructure.crypto` because it asks the backend registry
for the store a URL names, and every backend's key store builds on those two:
one module doing both would import itself back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentlog.domain.errors import EncryptionError
from agentlog.infrastructure.backends import DEFAULT, backend_named
from agentlog.infrastructure.crypto import (
    ENCRYPTION_ENV_VAR,
    KEYSTORE_ENV_VAR,
    MASTER_KEY_ENV_VAR,
    NEW_MASTER_KEY_ENV_VAR,
    OFF,
    PER_SESSION,
    EncryptionSettings,
    MasterKey,
)
from agentlog.infrastructure.store_url import (
    MEMORY_URLS,
    StoreConfig,
    mask_url,
    parse_store_url,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlog.infrastructure.backends.backend import Backend
    from agentlog.infrastructure.keystore import KeyStore


def open_key_store(
    url: str, master: MasterKey, events: Mapping[str, str] | None = None
) -> KeyStore:
    """The key store a URL names, its master key checked.

    ``events`` is the event store's environment: a key store inside the event
    database itself (the same SQLite file, the same PostgreSQL schema) is refused,
    since a copy of that database would carry the keys with the rows.
    """
    config = parse_store_url(url)
    backend = backend_named(config.env["PERSISTENCE_MODULE"])
    assert backend is not None  # every URL parse_store_url accepts names one
    _refuse_inside_events(backend, config, events or {})
    store = backend.key_store(master, config)
    try:
        store.check_master_key()
    except BaseException:
        store.close()
        raise
    return store


def _refuse_inside_events(
    backend: Backend, config: StoreConfig, events: Mapping[str, str]
) -> None:
    if backend_named(events.get("PERSISTENCE_MODULE")) is backend and backend.holds(
        config, events
    ):
        msg = (
            f"the key store {mask_url(config.url)} is the event store itself; "
            "AGENTLOG_KEYSTORE must name another file, database or schema"
        )
        raise EncryptionError(msg)


def rotate_master_key(store_url: str, env: Mapping[str, str]) -> tuple[int, str]:
    """Wrap every data key of a store's key store with ``AGENTLOG_NEW_MASTER_KEY``.

    ``env`` holds ``AGENTLOG_MASTER_KEY`` (the current key), the new one and, if
    the store needs it, ``AGENTLOG_KEYSTORE``. Returns how many keys were wrapped
    again and the key store's display name. A key store that does not exist yet
    is refused rather than created.
    """
    events = parse_store_url(store_url).env
    settings = encryption_settings({**env, **events, ENCRYPTION_ENV_VAR: PER_SESSION})
    assert settings is not None
    new_master = MasterKey.from_base64(
        env.get(NEW_MASTER_KEY_ENV_VAR), NEW_MASTER_KEY_ENV_VAR
    )
    if settings.keystore.strip() not in MEMORY_URLS:
        path = parse_store_url(settings.keystore).sqlite_path
        if path is not None and not Path(path).is_file():
            msg = f"no key store at {mask_url(settings.keystore)}: nothing to rotate"
            raise EncryptionError(msg)
    store = open_key_store(settings.keystore, settings.master_key, events)
    try:
        return store.rotate(new_master), store.display
    finally:
        store.close()


def encryption_settings(env: Mapping[str, str]) -> EncryptionSettings | None:
    """The settings the environment asks for; ``None`` when encryption is off.

    ``env`` is the application's environment after the store URL was applied
    (``PERSISTENCE_MODULE``, ``SQLITE_DBNAME``). Every mistake is an
    :class:`EncryptionError` that names the variable, never its value's key.
    """
    mode = (env.get(ENCRYPTION_ENV_VAR) or "").strip().lower()
    if mode in OFF:
        return None
    if mode != PER_SESSION:
        msg = (
            f"{ENCRYPTION_ENV_VAR} must be {PER_SESSION!r} or 'off', not "
            f"{env.get(ENCRYPTION_ENV_VAR)!r}"
        )
        raise EncryptionError(msg)
    if env.get("CIPHER_KEY") or env.get("CIPHER_TOPIC"):
        msg = (
            f"{ENCRYPTION_ENV_VAR}={PER_SESSION} replaces the library's CIPHER_KEY / "
            "CIPHER_TOPIC; set only one of them"
        )
        raise EncryptionError(msg)
    master_key = MasterKey.from_base64(env.get(MASTER_KEY_ENV_VAR))
    keystore = (env.get(KEYSTORE_ENV_VAR) or "").strip() or default_keystore(env)
    return EncryptionSettings(master_key, keystore)


def default_keystore(env: Mapping[str, str]) -> str:
    """The store's backend's default key store (``<database>.keys`` beside a
    SQLite file; memory beside memory); a backend without one is refused.

    A PostgreSQL store has no place outside its database we could pick: the
    operator names one (docs/encryption.md#where-keys-live).
    """
    module = env.get("PERSISTENCE_MODULE")
    # The library's module name, or the factory agentlog puts in its place.
    backend = DEFAULT if not module else backend_named(module)
    default = None if backend is None else backend.default_keystore(env)
    if default is not None:
        return default
    msg = (
        f"{ENCRYPTION_ENV_VAR}={PER_SESSION} on this store needs {KEYSTORE_ENV_VAR}: "
        "a key store outside the event database (sqlite:////path/keys.db, or "
        "postgresql://…?schema=… in another database or schema; see "
        "docs/encryption.md)"
    )
    raise EncryptionError(msg)
