"""The in-memory backend's descriptor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.infrastructure.backends.backend import Backend

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentlog.application.ports import ViewClasses
    from agentlog.infrastructure.crypto import MasterKey
    from agentlog.infrastructure.keystore import KeyStore
    from agentlog.infrastructure.store_url import StoreConfig


class MemoryBackend(Backend):
    """The library's POPO persistence with our recorder, views in dicts, no
    search index (search scans), keys in process memory."""

    name = "memory"
    persistence_module = "eventsourcing.popo"
    factory_topic = (
        "agentlog.infrastructure.backends.memory.factory:AgentlogPOPOFactory"
    )
    can_subscribe = True

    def view_classes(self) -> ViewClasses:
        from agentlog.infrastructure.backends.memory.views import VIEW_CLASSES

        return VIEW_CLASSES

    def default_keystore(self, env: Mapping[str, str]) -> str | None:
        return "memory:"

    def key_store(self, master: MasterKey, config: StoreConfig) -> KeyStore:
        from agentlog.infrastructure.backends.memory.keystore import MemoryKeyStore

        return MemoryKeyStore(master)


BACKEND = MemoryBackend()
