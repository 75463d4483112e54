"""The adapter interface every benchmarked system implements, plus shared helpers.

Each operation is what one workload times; a system that lacks the feature
leaves it out of :attr:`BenchSystem.features` and the runner reports ``n/a``
instead of a hand-built imitation.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .workload import SURFACE_TYPES

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from agentlog.application import Sessions

    from .workload import Conversation, Group, Intent

Flush = Literal["event", "step", "batch"]
"""When to make appends durable: per event, per step group, or in big batches
(the fixture-building path; each system's fastest ordinary API use)."""

BATCH_GROUPS = 50
CWD = "/bench"


def now_ms() -> int:
    """Wall-clock epoch milliseconds, as agentlog stamps ``time``."""
    return time.time_ns() // 1_000_000


@dataclass
class SessionRef:
    """What a cold reader knows about a stored fixture session."""

    session_id: str
    n_messages: int
    n_events: int
    tail_after: int
    fork_boundary: int
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, conversation: Conversation, **extra: Any) -> SessionRef:
        """Describe a generated conversation."""
        return cls(
            session_id=conversation.session_id,
            n_messages=conversation.n_messages,
            n_events=conversation.n_events,
            tail_after=conversation.tail_after(),
            fork_boundary=conversation.fork_boundary(),
            extra=dict(extra),
        )

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the worker protocol."""
        return asdict(self)


class BenchSystem(ABC):
    """One store under test, bound to one database file.

    Operations open the store themselves, so the first call in a fresh process
    is a cold one; :meth:`close` releases everything (files can then be sized).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    features: ClassVar[frozenset[str]]
    """Subset of {"w1", "w2a", "w2b", "w3", "w4", "w5", "w6"}."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when the system can run here, else why not (import failure)."""
        return None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """Package versions worth printing in the report."""
        return {}

    @classmethod  # noqa: B027 - an optional hook, empty by default
    def preload(cls) -> None:
        """Import what the operations need, so no timer includes module imports."""

    @abstractmethod
    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """Store a whole conversation; return extra facts for its SessionRef."""

    def write_many(self, conversations: Sequence[Conversation]) -> None:
        """Store many small sessions (the W3 listing fixture)."""
        for conversation in conversations:
            self.write(conversation, "batch")

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """W2a/W6: the whole derived history."""
        raise NotImplementedError

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """W2b: the last 50 messages."""
        raise NotImplementedError

    def list_page(self, limit: int = 50) -> Sequence[Any]:
        """W3: the first page of the titled session listing."""
        raise NotImplementedError

    def fork_read(self, ref: SessionRef, child_id: str) -> Sequence[Any]:
        """W4: fork at ``ref.fork_boundary`` and read the child's history."""
        raise NotImplementedError

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """W5: take a stored session over and append one flushed step."""
        raise NotImplementedError

    def compact(self, ref: SessionRef, conversation: Conversation) -> None:
        """W6 setup: append ``conversation``'s last group, a compaction turn."""
        self.append_group(ref, conversation.groups[-1])

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and applications."""


# -- the plain fold shared by the floor and raw eventsourcing ----------------------


def message_of(envelope: dict[str, Any]) -> dict[str, Any] | None:
    """docs/surface.md#derived-messages: one surface event to at most one LLM message."""
    event_type = envelope["type"]
    data = envelope["data"]
    if event_type == "user/message":
        return {"role": "user", "content": data["content"]}
    if event_type == "assistant/message":
        if not data["content"]:
            return None
        return {"role": "assistant", "content": data["content"]}
    if event_type == "tool/result":
        block = {
            "type": "tool-result",
            "toolCallId": data["callId"],
            "content": data["content"],
            "isError": data["isError"],
        }
        return {"role": "user", "content": [block]}
    if event_type in ("context/message", "steering/message"):
        tag = event_type.split("/", 1)[0]
        kind = json.dumps(data["source"]["kind"], ensure_ascii=False)
        return {
            "role": "user",
            "content": [
                {"type": "text", "text": f"<{tag} source={kind}>"},
                *data["content"],
                {"type": "text", "text": f"</{tag}>"},
            ],
        }
    return None


def derive_messages(envelopes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold surface markers (append/replace) and map the nodes to messages.

    The minimum any store must do; no validation (the log was valid when
    written). Messages are built from freshly decoded JSON, so no copy is needed.
    """
    nodes: list[int] = []
    by_seq: dict[int, dict[str, Any]] = {}
    for envelope in envelopes:
        op = envelope.get("surfaceOp")
        if op is None:
            continue
        seq = envelope["seq"]
        by_seq[seq] = envelope
        if op == "append":
            nodes.append(seq)
        else:
            i = nodes.index(op["start"])
            j = nodes.index(op["end"])
            nodes[i : j + 1] = [seq]
    messages = []
    for seq in nodes:
        message = message_of(by_seq[seq])
        if message is not None:
            messages.append(message)
    return messages


def tail_messages(envelopes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages of an append-only tail window (no replace reaches into it)."""
    messages = []
    for envelope in envelopes:
        if envelope.get("surfaceOp") == "append":
            message = message_of(envelope)
            if message is not None:
                messages.append(message)
    return messages


def intent_message(intent: Intent) -> dict[str, Any] | None:
    """The message an appended surface intent derives (for peers' conversions)."""
    if intent.type not in SURFACE_TYPES:
        return None
    return message_of({"type": intent.type, "data": intent.data})


def digest(messages: Sequence[Any]) -> str:
    """Short content hash, so the report can show that reads agree."""
    text = json.dumps(messages, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def store_bytes(db_path: Path) -> int:
    """Bytes on disk after folding the WAL into the database file."""
    if db_path.exists():
        with sqlite3.connect(db_path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    total = 0
    for suffix in ("", "-wal"):
        part = Path(f"{db_path}{suffix}")
        if part.exists():
            total += part.stat().st_size
    return total


def env_for(backend: str, directory: Path) -> tuple[dict[str, str], Path | str]:
    """A fresh store for a figures script: a SQLite file in ``directory`` (and its
    path), or a new PostgreSQL schema on the test server (and its name, for
    :func:`drop_schema`)."""
    if backend == "sqlite":
        path = directory / "agentlog.db"
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
        }, path
    from agentlog.infrastructure.store import parse_store_url
    from tests.conftest import PG_URL

    schema = "bench_" + uuid.uuid4().hex[:12]
    return {**parse_store_url(PG_URL).env, "POSTGRES_SCHEMA": schema}, schema


def drop_schema(schema: str) -> None:
    import psycopg

    from tests.conftest import pg_params

    with psycopg.connect(**pg_params()) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def versions() -> str:
    """The line a figures script prints under its title: versions and load."""
    return (
        f"# Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"eventsourcing {version('eventsourcing')}, load average "
        f"{os.getloadavg()[0]:.1f}"
    )


@contextmanager
def bench_store(
    backend: str, extra: Mapping[str, str] | None = None
) -> Iterator[tuple[Sessions, Path | str]]:
    """A figures script's fresh store (its environment plus ``extra``), opened
    (``Sessions``) and where it lives; closed afterwards, and a PostgreSQL
    schema dropped."""
    from agentlog.application import Sessions

    with tempfile.TemporaryDirectory() as tmp:
        env, where = env_for(backend, Path(tmp))
        app = Sessions(env={**env, **(extra or {})})
        try:
            yield app, where
        finally:
            app.close()
            if isinstance(where, str):
                drop_schema(where)


def append_flushed(
    app: Any, handle: Any, intents: Sequence[Intent], batch: int
) -> None:
    """Append every intent to ``handle``, flushing every ``batch`` appends and at
    the end (the append-throughput path)."""
    for count, intent in enumerate(intents, start=1):
        handle.append(
            intent.type,
            intent.data,
            surface_op=intent.surface_op,
            source_event_seqs=intent.source_event_seqs,
        )
        if count % batch == 0:
            app.flush(handle)
    app.flush(handle)
