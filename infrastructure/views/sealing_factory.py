"""The factories' side of sealed views: which class, and whose keys.

Each of our persistence factories mixes :class:`SealingFactory` in: when
``AGENTLOG_ENCRYPTION=per-session``, every view it builds is the sealed class
(``views.sealing.sealed_class``) and seals with :class:`ViewKeys` of one key
store. A ``Sessions`` gives its factory its own key store (the mapper's:
one connection, one cache); a factory without one (a view worker's runner,
which builds its view before its application) opens one from its environment
and closes it with itself.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agentlog.infrastructure.views.sealing import SealableView, ViewKeys, sealed_class

if TYPE_CHECKING:
    from agentlog.infrastructure.keystore import KeyStore


class SealingFactory:
    """Mixed into an ``InfrastructureFactory``: views sealed when encryption is on."""

    env: Any
    view_keys: ViewKeys | None = None
    """Set by the application that owns this factory (its mapper's key store)."""
    _own_keys: KeyStore | None = None
    _keys_lock = threading.Lock()

    def tracking_recorder(self, tracking_recorder_class: Any = None) -> Any:
        keys = self._keys_for_views(tracking_recorder_class)
        if keys is not None:
            tracking_recorder_class = sealed_class(tracking_recorder_class)
        view = super().tracking_recorder(tracking_recorder_class)  # type: ignore[misc]
        if keys is not None and isinstance(view, SealableView) and view.sealed:
            view.use_keys(keys)
        return view

    def _keys_for_views(self, view_class: Any) -> ViewKeys | None:
        """The keys a view of ``view_class`` seals with; ``None``: plaintext."""
        if not (
            isinstance(view_class, type)
            and issubclass(view_class, SealableView)
            and view_class.can_seal()
        ):
            return None
        if self.view_keys is not None:
            return self.view_keys
        # Imported here: the key stores bring their drivers, which a store
        # without encryption never needs.
        from agentlog.infrastructure.key_store_setup import (
            encryption_settings,
            open_key_store,
        )

        settings = encryption_settings(self.env)
        if settings is None:
            return None
        with self._keys_lock:
            if self.view_keys is None:
                self._own_keys = open_key_store(
                    settings.keystore, settings.master_key, self.env
                )
                self.view_keys = ViewKeys(self._own_keys)
            return self.view_keys

    def close(self) -> None:
        super().close()  # type: ignore[misc]
        if self._own_keys is not None:
            self._own_keys.close()
