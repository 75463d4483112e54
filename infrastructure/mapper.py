"""The mapper between session events and the recorders' stored events.

A stored event's topic is the wire type (``turn/start``, ``session`` for the header,
``session-snapshot`` for snapshots) and its state is the log line itself: the compact
JSON of the envelope, as our JSONL export writes it. The library's default JSON
transcoder is not used: it would break on user dicts with keys ``_type_``/``_data_``,
and it resolves topics by importing modules, which a crafted log must never trigger.
Compression comes from the library (``COMPRESSOR_TOPIC``); encryption either from
the library (``CIPHER_TOPIC``, one key for everything) or, with
``AGENTLOG_ENCRYPTION=per-session``, from each session's own data key (``keys``,
see docs/encryption.md): the compressed state is sealed with AES-GCM, bound to its
session, version and topic, so the mapper is the one place that opens a row.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from eventsourcing.persistence import Mapper, StoredEvent

from agentlog.domain.errors import (
    AgentlogError,
    CorruptSessionLogError,
    EncryptionError,
    SessionKeyForgottenError,
)
from agentlog.domain.json import dumps, loads
from agentlog.domain.topics import ERASED_TOPIC, HEADER_TOPIC, SNAPSHOT_TOPIC
from agentlog.infrastructure.crypto import is_sealed, row_context

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.domain import DomainEventProtocol

    from agentlog.domain.events import Erased, SessionEvent
    from agentlog.domain.json import Envelope
    from agentlog.domain.session import SessionCreated, SessionSnapshot
    from agentlog.infrastructure.keystore import KeyStore

logger = logging.getLogger(__name__)


class _EventClasses(NamedTuple):
    event: type[SessionEvent]
    created: type[SessionCreated]
    snapshot: type[SessionSnapshot]
    erased: type[Erased]
    build: Callable[[str, Envelope, bytes | None], SessionEvent]


@functools.cache
def _classes() -> _EventClasses:
    """The domain's event classes, imported by the first row mapped.

    The event classes bring the vocabulary and its payload models: a process
    that only reads the views (``agentlog ls``) maps no row and never loads
    them, while a writer has them already (``Sessions`` imports the aggregate).
    """
    from agentlog.domain.events import Erased, SessionEvent, build_event
    from agentlog.domain.session import SessionCreated, SessionSnapshot

    return _EventClasses(
        SessionEvent, SessionCreated, SessionSnapshot, Erased, build_event
    )


class SessionMapper(Mapper[str]):
    """Stores each event as its log line; reads it back without importing anything."""

    keys: KeyStore | None = None
    """The per-session data keys, when ``AGENTLOG_ENCRYPTION=per-session``."""

    def to_stored_event(self, domain_event: DomainEventProtocol[str]) -> StoredEvent:
        topic, plain = self.plain_state(domain_event)
        session_id = str(domain_event.originator_id)
        version = domain_event.originator_version
        return StoredEvent(
            originator_id=domain_event.originator_id,
            originator_version=version,
            topic=topic,
            state=self.encode_state(plain)
            if topic == ERASED_TOPIC  # never sealed: the audit outlives the key
            else self.seal(session_id, version, topic, self.encode_state(plain)),
        )

    @staticmethod
    def plain_state(domain_event: DomainEventProtocol[str]) -> tuple[str, bytes]:
        """The row's topic and its plain state (the log line, or the snapshot)."""
        classes = _classes()
        if isinstance(domain_event, classes.event):
            return domain_event.topic, domain_event.encoded
        if isinstance(domain_event, classes.created):
            return HEADER_TOPIC, domain_event.encoded
        if isinstance(domain_event, classes.snapshot):
            return SNAPSHOT_TOPIC, dumps(domain_event.state)
        if isinstance(domain_event, classes.erased):
            return ERASED_TOPIC, dumps(domain_event.state)
        msg = f"agentlog cannot store {type(domain_event).__qualname__} events"
        raise TypeError(msg)

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[str]:
        session_id = str(stored_event.originator_id)
        version = stored_event.originator_version
        plain = self.decode_bytes(stored_event)
        value = self.decode_json(stored_event, plain)
        # The row's version decides what it is: version 1 is the header and nothing
        # else is. A header topic further on, or a snapshot topic whose state is an
        # envelope, is an event of that type (written before such names were
        # refused); reading it as a header or a snapshot would break the replay.
        classes = _classes()
        if version == 1:
            return classes.created(session_id, self.check_header(stored_event, value))
        if stored_event.topic == SNAPSHOT_TOPIC and is_snapshot_state(value):
            return classes.snapshot(session_id, version, value)
        if stored_event.topic == ERASED_TOPIC and classes.erased.is_state(value):
            return classes.erased.from_state(version, value)
        self.check_envelope(stored_event, value)
        return classes.build(session_id, value, plain)

    def encode_state(self, state: bytes) -> bytes:
        """Compress, then encrypt with the library's cipher (if configured)."""
        if self.compressor:
            state = self.compressor.compress(state)
        if self.cipher:
            state = self.cipher.encrypt(state)
        return state

    def seal(self, session_id: str, version: int, topic: str, state: bytes) -> bytes:
        """The state sealed with the session's data key (made on first use)."""
        if self.keys is None:
            return state
        key = self.keys.data_key(session_id, create=True)
        assert key is not None
        return key.seal(row_context(session_id, version, topic), state)

    def unseal(self, stored_event: StoredEvent) -> bytes:
        """The row's state opened with its session's key (a plain row as it is).

        A session whose key was forgotten reads as never stored
        (:class:`SessionKeyForgottenError`, a :class:`SessionNotFoundError`).
        """
        state = stored_event.state
        # The library's cipher (never used together with per-session keys) starts
        # its output with a random nonce, which may look like the sealed prefix.
        if self.cipher is not None or not is_sealed(state):
            return state
        session_id = str(stored_event.originator_id)
        if self.keys is None:
            msg = (
                f'session "{session_id}" is encrypted: open the store with '
                "AGENTLOG_ENCRYPTION=per-session and its master key"
            )
            raise EncryptionError(msg)
        key = self.keys.data_key(session_id)
        if key is None:
            raise SessionKeyForgottenError(session_id)
        context = row_context(
            session_id, stored_event.originator_version, stored_event.topic
        )
        try:
            return key.open(context, state)
        except ValueError as error:
            raise corrupt(stored_event, str(error)) from None

    def reseal(self, stored_event: StoredEvent, session_id: str) -> StoredEvent:
        """The row as ``session_id``'s own (a fork's copy of its parent's row)."""
        if self.keys is None:
            return StoredEvent(
                session_id,
                stored_event.originator_version,
                stored_event.topic,
                stored_event.state,
            )
        version, topic = stored_event.originator_version, stored_event.topic
        state = self.seal(session_id, version, topic, self.unseal(stored_event))
        return StoredEvent(session_id, version, topic, state)

    @property
    def copies_verbatim(self) -> bool:
        """Whether a row may be copied to another session byte for byte."""
        return self.keys is None

    def decode_bytes(self, stored_event: StoredEvent) -> bytes:
        """The plain JSON bytes of a stored event (opened, decrypted, decompressed)."""
        state = self.unseal(stored_event)
        try:
            if self.cipher:
                state = self.cipher.decrypt(state)
            if self.compressor:
                state = self.compressor.decompress(state)
        except Exception as error:
            raise corrupt(
                stored_event, f"cannot decode stored bytes: {error}"
            ) from error
        return state

    def decode_json(self, stored_event: StoredEvent, plain: bytes) -> Any:
        try:
            return loads(plain)
        except Exception as error:
            raise corrupt(stored_event, "stored event is not valid JSON") from error

    def decode_envelope(self, stored_event: StoredEvent) -> Envelope:
        """The envelope of a stored log event, checked against its row."""
        value = self.decode_json(stored_event, self.decode_bytes(stored_event))
        self.check_envelope(stored_event, value)
        return value  # type: ignore[no-any-return]

    @staticmethod
    def check_header(stored_event: StoredEvent, value: Any) -> dict[str, Any]:
        """The header of a version-1 row, checked against its row."""
        if (
            stored_event.topic != HEADER_TOPIC
            or type(value) is not dict
            or value.get("type", HEADER_TOPIC) != HEADER_TOPIC
            or value.get("id") != str(stored_event.originator_id)
        ):
            raise corrupt(stored_event, "stored header does not match its row")
        header = dict(value)
        header.pop("type", None)
        return header

    @staticmethod
    def check_envelope(stored_event: StoredEvent, value: Any) -> None:
        if (
            type(value) is not dict
            or value.get("seq") != stored_event.originator_version - 2
            or value.get("type") != stored_event.topic
        ):
            raise corrupt(stored_event, "stored event does not match its row")


@dataclass(frozen=True)
class UnreadableRow:
    """A row :class:`ViewMapper` could not read: the views skip it."""

    originator_id: str
    originator_version: int


class ViewMapper(SessionMapper):
    """The mapper of the view worker's application: an unreadable row (corrupt, or
    its session's key forgotten by an erase) becomes an :class:`UnreadableRow`,
    logged, instead of stopping the worker and with it every other session's
    views, as the in-process catch-up skips such rows too."""

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[str]:
        try:
            return super().to_domain_event(stored_event)
        except AgentlogError as error:
            logger.warning(
                "views skip an unreadable row of session %r at version %d: %s",
                str(stored_event.originator_id),
                stored_event.originator_version,
                type(error).__name__,
            )
            return UnreadableRow(
                str(stored_event.originator_id), stored_event.originator_version
            )


def is_snapshot_state(value: Any) -> bool:
    """Tell a snapshot's state (decision state, no ``type``) from an envelope."""
    return type(value) is dict and "header" in value and "type" not in value


def corrupt(stored_event: StoredEvent, reason: str) -> CorruptSessionLogError:
    """A typed error naming the session and the seq of an undecodable row."""
    session_id = str(stored_event.originator_id)
    seq = stored_event.originator_version - 2
    where = "header" if seq < 0 else f"seq {seq}"
    return CorruptSessionLogError(
        f'corrupt session log: session "{session_id}" has an unreadable event at '
        f"{where}: {reason}",
        session_id=session_id,
        seq=seq if seq >= 0 else None,
    )
