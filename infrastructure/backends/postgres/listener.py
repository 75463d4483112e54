"""Committed writes, heard as they happen: ``LISTEN`` on the events' channel.

Every write of the library's recorder runs ``NOTIFY <channel>`` in its
transaction, so a listener hears each commit of any process. The viewer's live
streams wait on it instead of polling (docs/viewer.md). Behind a pooler in
transaction mode a ``LISTEN`` hears nothing, so there is no listener there
(:func:`~agentlog.infrastructure.backends.postgres.pooler.listens`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.sql import SQL, Identifier

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

logger = logging.getLogger(__name__)

CHECK_SECONDS = 0.5
"""How often the listening thread looks whether it was closed."""
RECONNECT_SECONDS = 1.0


class WriteListener:
    """One connection of its own that ``LISTEN``s, in a daemon thread.

    ``wake`` is called after each notification, and once each time the
    connection is (re)made, since writes made while it was down were not
    heard. A lost connection is made again every :data:`RECONNECT_SECONDS`.
    """

    def __init__(
        self, kwargs: Mapping[str, Any], channel: str, wake: Callable[[], None]
    ) -> None:
        self._kwargs = dict(kwargs)
        self._channel = channel
        self._wake = wake
        self._closed = threading.Event()
        self.listening = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="agentlog-listen", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                with psycopg.connect(**self._kwargs, autocommit=True) as connection:
                    connection.execute(
                        SQL("LISTEN {0}").format(Identifier(self._channel))
                    )
                    self.listening.set()
                    self._wake()
                    while not self._closed.is_set():
                        for _ in connection.notifies(
                            timeout=CHECK_SECONDS, stop_after=1
                        ):
                            self._wake()
            except psycopg.Error as error:
                self.listening.clear()
                logger.warning(
                    "the live listener lost PostgreSQL (retrying): %s",
                    " ".join(str(error).split()),
                )
                self._wake()
                self._closed.wait(RECONNECT_SECONDS)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(RuntimeError):
            self._thread.join(CHECK_SECONDS * 4)
