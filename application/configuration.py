"""Opening the store: which backend, which mapper, which keys.

:class:`ConfiguredApplication` is the library's ``Application`` plus agentlog's one
way of naming a store (a URL, ``AGENTLOG_STORE``, the library's own variables) and
of wiring per-session encryption into the mapper. ``Sessions`` builds on it; a
store that cannot be opened is a :class:`StoreUnavailableError`.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from eventsourcing.application import Application
from eventsourcing.persistence import PersistenceError as EventSourcingPersistenceError

from agentlog.domain.errors import AgentlogError, StoreUnavailableError, StoreURLError
from agentlog.infrastructure.crypto import EncryptionSettings, encryption_settings
from agentlog.infrastructure.mapper import SessionMapper
from agentlog.infrastructure.store_url import STORE_ENV_VAR, parse_store_url

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventsourcing.persistence import Mapper
    from eventsourcing.utils import Environment, EnvType

POSTGRES_FACTORY_TOPIC = (
    "agentlog.infrastructure.backends.postgres.factory:AgentlogPostgresFactory"
)
POPO_FACTORY_TOPIC = (
    "agentlog.infrastructure.backends.memory.factory:AgentlogPOPOFactory"
)


class ConfiguredApplication(Application[str]):
    """An ``Application[str]`` whose store comes from agentlog's settings."""

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        store: str | None = None,
        create_tables: bool = True,
    ) -> None:
        """Open the store ``store`` names (see :meth:`construct_env` for the rest).

        ``create_tables=False`` never creates anything (run ``agentlog migrate``
        once instead). Whatever fails to open closes what was opened first.
        """
        self._store_url = store
        self._store_display = ""
        self._create_tables = create_tables
        self._encryption: EncryptionSettings | None = None
        try:
            super().__init__(env)
        except (EventSourcingPersistenceError, OSError) as error:
            self._close_partly_open()
            where = f" {self._store_display}" if self._store_display else ""
            msg = f"cannot open the store{where}: {error}".strip()
            raise StoreUnavailableError(msg) from error
        except AgentlogError:
            self._close_partly_open()
            raise
        except Exception as error:
            # A driver's own error (a backend killed while the tables are made):
            # every failure at open is typed (docs/errors.md).
            self._close_partly_open()
            where = f" {self._store_display}" if self._store_display else ""
            reason = " ".join(str(error).split()) or type(error).__name__
            msg = f"cannot open the store{where}: {reason}"
            raise StoreUnavailableError(msg) from error

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """One way to name a store, honoured everywhere.

        ``store=URL``; else ``AGENTLOG_STORE``, then the library's own variables
        (``PERSISTENCE_MODULE``…), first in the ``env`` given, then in the
        process environment; else in memory. Code beats the process environment.
        """
        given = dict(env or {})
        url = self._store_url or given.get(STORE_ENV_VAR)
        if not url and "PERSISTENCE_MODULE" not in given:
            url = os.environ.get(STORE_ENV_VAR)
        if url:
            config = parse_store_url(url)
            self._store_display = config.display
            given.update(config.env)
        if not self._create_tables:
            given["CREATE_TABLE"] = "n"
        environment = super().construct_env(name, given)
        module = environment.get("PERSISTENCE_MODULE")
        if module == "eventsourcing.sqlite":
            # Adds an exact read of surface rows (backends.sqlite.recorders).
            environment.setdefault(
                "APPLICATION_RECORDER_TOPIC",
                "agentlog.infrastructure.backends.sqlite.recorders:SQLiteSessionRecorder",
            )
        elif module == "eventsourcing.postgres":
            # URL parameters, an early connection check and locked table creation.
            environment["PERSISTENCE_MODULE"] = POSTGRES_FACTORY_TOPIC
        elif module in (None, "", "eventsourcing.popo"):
            # The write guard and erasure of docs/erasure.md, in memory too.
            environment["PERSISTENCE_MODULE"] = POPO_FACTORY_TOPIC
        # Session ids are strings: an inherited ORIGINATOR_ID_TYPE=uuid would make
        # writes commit and every read fail, so it is forced here.
        for key in environment.create_keys("ORIGINATOR_ID_TYPE"):
            environment[key] = "text"
        # Checked before any connection is made: a bad setting opens nothing.
        self._encryption = encryption_settings(environment)
        return environment

    def construct_mapper(self) -> Mapper[str]:
        """The library's mapper (``MAPPER_TOPIC``), given the per-session keys
        when ``AGENTLOG_ENCRYPTION=per-session`` (docs/encryption.md)."""
        mapper = super().construct_mapper()
        if self._encryption is not None:
            # Imported here: the key stores bring psycopg, which a store without
            # encryption never needs at start-up (the command line's import time).
            from agentlog.infrastructure.keystore import open_key_store

            if not isinstance(mapper, SessionMapper):
                msg = "per-session encryption needs agentlog's SessionMapper"
                raise StoreURLError(msg)
            mapper.keys = open_key_store(
                self._encryption.keystore, self._encryption.master_key, self.env
            )
        return mapper

    @property
    def session_mapper(self) -> SessionMapper:
        """The mapper, as agentlog's (its plain bytes, its per-session keys)."""
        assert isinstance(self.mapper, SessionMapper)
        return self.mapper

    def forget_keys(self, session_ids: Iterable[str]) -> int:
        """Delete these sessions' data keys (crypto-shredding; docs/encryption.md).

        :meth:`erase` does this after every erase it commits; call it directly
        only to shred without erasing. Without per-session encryption there are
        no keys and this returns 0.
        Every stored copy of those sessions' rows, backups included, can no
        longer be decrypted; reading them raises ``SessionKeyForgottenError``
        (a :class:`SessionNotFoundError`).
        """
        keys = self.mapper.keys if isinstance(self.mapper, SessionMapper) else None
        return 0 if keys is None else keys.forget(session_ids)

    @property
    def has_data_keys(self) -> bool:
        """Whether per-session encryption is on (erasures then shred keys)."""
        return isinstance(self.mapper, SessionMapper) and self.mapper.keys is not None

    def close(self) -> None:
        """Close the library's store, then the key store."""
        super().close()
        if isinstance(self.mapper, SessionMapper) and self.mapper.keys is not None:
            self.mapper.keys.close()

    def _close_partly_open(self) -> None:
        """Close what a failed ``__init__`` had opened (a pool, a key store)."""
        mapper = getattr(self, "mapper", None)
        if isinstance(mapper, SessionMapper) and mapper.keys is not None:
            mapper.keys.close()
        factory = getattr(self, "factory", None)
        if factory is not None:
            with contextlib.suppress(Exception):
                factory.close()
