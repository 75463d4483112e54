"""Opening the store: which backend, which mapper, which keys.

:class:`ConfiguredApplication` is the library's ``Application`` plus agentlog's one
way of naming a store (a URL, ``AGENTLOG_STORE``, the library's own variables) and
of wiring per-session encryption into the mapper. ``Sessions`` builds on it; a
store that cannot be opened is a :class:`StoreUnavailableError`.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, ClassVar

from eventsourcing.application import Application
from eventsourcing.persistence import PersistenceError as EventSourcingPersistenceError
from eventsourcing.utils import Environment, resolve_topic

from agentlog.application.ports import KeyStore, PlainStates, StoreSetup
from agentlog.domain.errors import (
    AgentlogError,
    StoreReadOnlyError,
    StoreUnavailableError,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from eventsourcing.persistence import Mapper
    from eventsourcing.utils import EnvType


class ConfiguredApplication(Application[str]):
    """An ``Application[str]`` whose store comes from agentlog's settings.

    ``Sessions`` builds on it; opened alone it is the store without the session
    machinery (no aggregate, no event classes): what a process that only reads
    the views needs (``agentlog ls``; see
    :func:`~agentlog.infrastructure.store.open_views`).
    """

    name = "Sessions"
    """The application's name: its tables (``sessions_events``…) and the views'
    tracking positions are named after it."""
    env: ClassVar[dict[str, str]] = {
        "MAPPER_TOPIC": "agentlog.infrastructure.mapper:SessionMapper",
        "IS_SNAPSHOTTING_ENABLED": "y",
    }

    store_setup_topic: ClassVar[str] = (
        "agentlog.infrastructure.store_setup:SessionsSetup"
    )
    """Infrastructure's side of opening a store (``ports.StoreSetup``), named
    by topic as the library names its persistence module and mapper."""

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
        self._create_tables = create_tables
        self._setup: StoreSetup = resolve_topic(self.store_setup_topic)()
        try:
            super().__init__(env)
        except (EventSourcingPersistenceError, OSError) as error:
            self._close_partly_open()
            where = f" {self._setup.display}" if self._setup.display else ""
            msg = f"cannot open the store{where}: {error}".strip()
            raise StoreUnavailableError(msg) from error
        except AgentlogError:
            self._close_partly_open()
            raise
        except Exception as error:
            # A driver's own error (a backend killed while the tables are made):
            # every failure at open is typed (docs/errors.md).
            self._close_partly_open()
            where = f" {self._setup.display}" if self._setup.display else ""
            reason = " ".join(str(error).split()) or type(error).__name__
            msg = f"cannot open the store{where}: {reason}"
            raise StoreUnavailableError(msg) from error

    def construct_env(self, name: str, env: EnvType | None = None) -> Environment:
        """One way to name a store, honoured everywhere (``StoreSetup``).

        ``store=URL``; else ``AGENTLOG_STORE``, then the library's own variables
        (``PERSISTENCE_MODULE``…), first in the ``env`` given, then in the
        process environment; else in memory. Code beats the process environment.
        """
        return self._setup.environment(
            lambda given: super(ConfiguredApplication, self).construct_env(name, given),
            dict(env or {}),
            store=self._store_url,
            create_tables=self._create_tables,
        )

    @classmethod
    def store_environment(
        cls,
        env: EnvType | None = None,
        *,
        store: str | None = None,
        create_tables: bool = True,
    ) -> Environment:
        """The environment :meth:`construct_env` gives an application of this
        class on ``store``, without opening anything (a query-only open decides
        from it how to read, docs/query.md#query-only-opening).

        The library's own step (its ``construct_env``: the class's settings,
        the process environment, then ``env``) is repeated here, since it
        needs an instance; a test holds the two equal.
        """

        def construct(given: dict[str, str]) -> Environment:
            settings = dict(cls.env)
            if cls.is_snapshotting_enabled or cls.snapshotting_intervals:
                settings["IS_SNAPSHOTTING_ENABLED"] = "y"
            settings.update(os.environ)
            settings.update(given)
            return Environment(cls.name, settings)

        setup: StoreSetup = resolve_topic(cls.store_setup_topic)()
        return setup.environment(
            construct, dict(env or {}), store=store, create_tables=create_tables
        )

    def construct_mapper(self) -> Mapper[str]:
        """The library's mapper (``MAPPER_TOPIC``), given the per-session keys
        when ``AGENTLOG_ENCRYPTION=per-session`` (docs/encryption.md)."""
        mapper = self._setup.mapper(super().construct_mapper(), self.env)
        self._setup.views(self.factory)
        return mapper

    @property
    def session_mapper(self) -> PlainStates:
        """The mapper, as agentlog's (its plain bytes)."""
        assert isinstance(self.mapper, PlainStates)
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
        keys = self._setup.key_store
        return 0 if keys is None else keys.forget(session_ids)

    @property
    def key_store(self) -> KeyStore | None:
        """The per-session key store (``None``: encryption is off)."""
        return self._setup.key_store

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (a SQLite file this process
        cannot write, or ``?mode=ro``): reads work, writes raise
        :class:`~agentlog.domain.errors.StoreReadOnlyError`."""
        # A factory that can open read-only says so (SQLite's, PostgreSQL's).
        return bool(getattr(self.factory, "read_only", False))

    def check_writable(self) -> None:
        """Refuse a write up front on a read-only store (nothing is stored)."""
        if self.read_only:
            where = f" {self._setup.display}" if self._setup.display else ""
            msg = f"the store{where} is read-only: writes are refused"
            raise StoreReadOnlyError(msg)

    @property
    def has_data_keys(self) -> bool:
        """Whether per-session encryption is on (erasures then shred keys)."""
        return self._setup.key_store is not None

    def close(self) -> None:
        """Close the library's store, then the key store."""
        super().close()
        self._setup.close()

    def _close_partly_open(self) -> None:
        """Close what a failed ``__init__`` had opened (a pool, a key store)."""
        self._setup.close()
        factory = getattr(self, "factory", None)
        if factory is not None:
            with contextlib.suppress(Exception):
                factory.close()
