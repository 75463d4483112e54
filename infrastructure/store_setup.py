"""How a ``Sessions`` opens its store: URL, backend, environment, key store.

This is infrastructure's side of ``agentlog.application.ports.StoreSetup``: the
application hands over the library's ``construct_env`` and gets back the
environment, pointed at the backend's factory; then it hands over its mapper
and gets it back with the per-session key store when encryption is on
(docs/encryption.md). ``Sessions`` names this class by topic, the way the
library names its persistence module.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentlog.domain.errors import StoreURLError
from agentlog.infrastructure.backends import DEFAULT, backend_named
from agentlog.infrastructure.key_store_setup import encryption_settings
from agentlog.infrastructure.mapper import SessionMapper
from agentlog.infrastructure.store_url import STORE_ENV_VAR, parse_store_url
from agentlog.infrastructure.views.sealing import ViewKeys
from agentlog.infrastructure.views.sealing_factory import SealingFactory

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from eventsourcing.persistence import Mapper
    from eventsourcing.utils import Environment

    from agentlog.infrastructure.crypto import EncryptionSettings
    from agentlog.infrastructure.keystore import KeyStore


class SessionsSetup:
    """One application's store configuration (implements ``StoreSetup``)."""

    def __init__(self) -> None:
        self.display = ""
        self.key_store: KeyStore | None = None
        self._encryption: EncryptionSettings | None = None

    def environment(
        self,
        construct: Callable[[dict[str, str]], Environment],
        given: Mapping[str, str],
        *,
        store: str | None,
        create_tables: bool,
    ) -> Environment:
        """One way to name a store, honoured everywhere.

        ``store`` (a URL); else ``AGENTLOG_STORE``, then the library's own
        variables (``PERSISTENCE_MODULE``…), first in ``given``, then in the
        process environment; else in memory. Code beats the process environment.
        """
        settings = dict(given)
        url = store or settings.get(STORE_ENV_VAR)
        if not url and "PERSISTENCE_MODULE" not in settings:
            url = os.environ.get(STORE_ENV_VAR)
        if url:
            config = parse_store_url(url)
            self.display = config.display
            settings.update(config.env)
        if not create_tables:
            settings["CREATE_TABLE"] = "n"
        environment = construct(settings)
        module = environment.get("PERSISTENCE_MODULE")
        # Another module (a factory of the caller's own) is left as it is.
        backend = DEFAULT if not module else backend_named(module)
        if backend is not None:
            backend.configure(environment)
        # Session ids are strings: an inherited ORIGINATOR_ID_TYPE=uuid would make
        # writes commit and every read fail, so it is forced here.
        for key in environment.create_keys("ORIGINATOR_ID_TYPE"):
            environment[key] = "text"
        # Checked before any connection is made: a bad setting opens nothing.
        self._encryption = encryption_settings(environment)
        return environment

    def mapper(self, mapper: Mapper[str], env: Mapping[str, str]) -> Mapper[str]:
        """The library's mapper (``MAPPER_TOPIC``), given the per-session keys
        when ``AGENTLOG_ENCRYPTION=per-session`` (docs/encryption.md)."""
        if self._encryption is not None:
            # Imported here: the key stores bring psycopg, which a store without
            # encryption never needs at start-up (the command line's import time).
            from agentlog.infrastructure.key_store_setup import open_key_store

            if not isinstance(mapper, SessionMapper):
                msg = "per-session encryption needs agentlog's SessionMapper"
                raise StoreURLError(msg)
            self.key_store = open_key_store(
                self._encryption.keystore, self._encryption.master_key, env
            )
            mapper.keys = self.key_store
        return mapper

    def views(self, factory: object) -> None:
        """The views of our factories seal with the mapper's key store: one
        connection and one cache of data keys per application."""
        if self.key_store is not None and isinstance(factory, SealingFactory):
            factory.view_keys = ViewKeys(self.key_store)

    def close(self) -> None:
        if self.key_store is not None:
            self.key_store.close()
