"""Builders for the query tests: sessions through the application, raw rows,
and persistence readers that count, fail or lie."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent

from agentlog.application import SessionHandle, Sessions
from agentlog.domain.json import Envelope, dumps
from tests.scenarios.harness import SE, SS, TE, TS, A, Append, U

TURN1 = (TS(1), U("hi"), SS(1, 1), A("hello"), SE(1, 1), TE(1))


def session(
    app: Sessions,
    session_id: str,
    *appends: Append,
    created_at: int = 1,
    parent: str | None = None,
    cwd: str | None = "/w",
    flush: bool = True,
    close: bool = True,
) -> SessionHandle:
    """A session with these appends; flushed and closed unless told otherwise."""
    handle = app.create_session(
        cwd=cwd, session_id=session_id, created_at=created_at, parent_session=parent
    )
    for append in appends:
        append.to(handle)  # type: ignore[arg-type]
    if close:
        app.close(handle)
    elif flush:
        app.flush(handle)
    return handle


def header(session_id: str, created_at: int = 1, **extra: Any) -> dict[str, Any]:
    return {"version": 0, "id": session_id, "createdAt": created_at, **extra}


def raw_write(
    app: Sessions, head: Mapping[str, Any], events: Sequence[Envelope]
) -> None:
    """Store a log exactly as given (even one ``append`` would refuse), one batch."""
    raw_write_many(app, [(head, events)])


def raw_write_many(
    app: Sessions, logs: Sequence[tuple[Mapping[str, Any], Sequence[Envelope]]]
) -> None:
    encode: Callable[[bytes], bytes] = app.mapper.encode_state  # type: ignore[attr-defined]
    rows: list[StoredEvent] = []
    for head, events in logs:
        session_id = str(head["id"])
        line = {"type": "session", **head}
        rows.append(StoredEvent(session_id, 1, "session", encode(dumps(line))))
        rows.extend(
            StoredEvent(session_id, i + 2, str(e["type"]), encode(dumps(e)))
            for i, e in enumerate(events)
        )
    app.recorder.insert_events(rows)


def ev(seq: int, append: Append, time: int = 1000) -> Envelope:
    return append.envelope(seq, time)


class CountingReader:
    """Wraps a reader and counts ``list``/``load`` calls; can fail or alter them."""

    def __init__(
        self,
        inner: Any,
        *,
        fail_list: BaseException | None = None,
        fail_load: BaseException | None = None,
        alter_loaded: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.inner = inner
        self.fail_list = fail_list
        self.fail_load = fail_load
        self.alter_loaded = alter_loaded
        self.lists = 0
        self.loads = 0

    def list(self) -> Sequence[Mapping[str, Any]]:
        self.lists += 1
        if self.fail_list is not None:
            raise self.fail_list
        return self.inner.list()  # type: ignore[no-any-return]

    def load(self, session_id: str) -> tuple[Mapping[str, Any], Sequence[Envelope]]:
        self.loads += 1
        if self.fail_load is not None:
            raise self.fail_load
        head, events = self.inner.load(session_id)
        head = dict(head)
        if self.alter_loaded is not None:
            self.alter_loaded(head)
        return head, events

    @property
    def calls(self) -> int:
        return self.lists + self.loads


class CountingRecorder:
    """Counts the store reads of an application recorder (select_events et al.)."""

    def __init__(self, app: Sessions) -> None:
        self.counts: dict[str, int] = {}
        self._app = app
        self._originals: dict[str, Any] = {}
        for name in ("select_events", "select_notifications", "max_notification_id"):
            original = getattr(app.recorder, name)
            self._originals[name] = original
            setattr(app.recorder, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.counts[name] = self.counts.get(name, 0) + 1
            return original(*args, **kwargs)

        return counted

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)

    def restore(self) -> None:
        for name in self._originals:
            delattr(self._app.recorder, name)
