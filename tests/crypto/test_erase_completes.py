"""Erasure completes or reports truly (issue 21): once the tombstone commits, the
erase reports the session erased, whatever fails after it; the keys, the scrub and
the hooks left pending are recorded in the store and finished at the next open,
erase or gc."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agentlog import SessionNotFoundError, SessionQuery
from agentlog.application import Sessions
from agentlog.application.search_index import search_index_of
from agentlog.domain.errors import StoreUnavailableError
from tests.crypto.test_erase import key_exists
from tests.crypto.test_round_trip import write

if TYPE_CHECKING:
    from collections.abc import Callable


def failing(error: Exception) -> Callable[..., Any]:
    def fail(*args: object, **kwargs: object) -> Any:
        raise error

    return fail


def test_a_failed_forget_is_reported_pending_and_finished_at_the_next_open(
    open_app: Callable[..., Sessions],
    crypto_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = open_app()
    write(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    keys = app.mapper.keys  # type: ignore[attr-defined]
    with monkeypatch.context() as patch:
        patch.setattr(keys, "forget", failing(StoreUnavailableError("key store down")))
        [erasure] = app.erase("erased", reason="request")
    assert erasure.session_id == "erased"
    assert erasure.pending == ("keys",)
    assert erasure.to_json()["pending"] == ["keys"]
    assert app.is_erased("erased")
    assert key_exists(crypto_env, "erased")  # the key store was down
    with pytest.raises(SessionNotFoundError):
        app.erase("erased", reason="again")  # erased is erased: no retry needed
    open_app()  # the next open finishes it
    assert not key_exists(crypto_env, "erased")
    assert key_exists(crypto_env, "kept")
    assert app.recorder.erase_pending(10) == []  # type: ignore[attr-defined]


def test_a_failed_scrub_and_hook_are_pending_and_gc_finishes_them(
    open_app: Callable[..., Sessions],
    crypto_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = open_app()
    write(app, "erased")
    calls: list[tuple[str, ...]] = []
    failures = [RuntimeError("hook down")]

    def hook(ids: tuple[str, ...]) -> None:
        calls.append(ids)
        if failures:
            raise failures.pop()

    app.eraser.add_hook(hook)
    later: list[tuple[str, ...]] = []
    app.eraser.add_hook(later.append)  # runs although the first one failed
    locked = StoreUnavailableError("the store is unavailable: database is locked")
    with monkeypatch.context() as patch:
        patch.setattr(app.eraser, "scrub", failing(locked))
        [erasure] = app.erase("erased", reason="request")
    assert erasure.pending == ("scrub", "hooks")
    assert not key_exists(crypto_env, "erased")  # keys go first, and did
    assert later == [("erased",)]
    assert app.recorder.erase_pending(10) == ["erased"]  # type: ignore[attr-defined]
    report = app.erase_older_than(0, reason="retention")
    assert report.pending == []
    assert calls == [("erased",), ("erased",)]
    assert app.recorder.erase_pending(10) == []  # type: ignore[attr-defined]


def test_gc_reports_what_stays_pending(
    open_app: Callable[..., Sessions], monkeypatch: pytest.MonkeyPatch
) -> None:
    old = open_app()
    write(old, "old")
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    keys = app.mapper.keys  # type: ignore[attr-defined]
    monkeypatch.setattr(keys, "forget", failing(StoreUnavailableError("down")))
    report = app.erase_older_than(2**62, reason="retention")
    assert report.erased == ["old"]
    assert report.pending == ["old"]
    assert report.to_json()["pending"] == ["old"]


def test_an_encrypted_index_chooses_no_common_words(
    open_app: Callable[..., Sessions],
    crypto_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The common words of the pairs would be plaintext in the index's meta
    table (and an erased session's words could be among them): with
    encryption on the index has none, however many documents it holds."""
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("the SQLite index's meta table (PostgreSQL: test_sealed_index)")
    from agentlog.infrastructure.backends.sqlite import search, search_index_writes

    monkeypatch.setattr(search, "PAIRS_AFTER", 2)
    app = open_app()
    write(app, "erased", "zanzibar zanzibar", "zanzibar answer", "zanzibar output")
    for number in range(3):
        write(app, f"kept{number}", "kept prompt", "kept answer", "kept output")
    index = search_index_of(app)
    assert index is not None
    index.catch_up()
    assert len(SessionQuery(app).search_sessions("kept answer").items) == 3
    view = index.search.view
    with view.datastore.transaction(commit=False) as c:
        assert search_index_writes.read_pairs(c) is None
        c.execute("SELECT name FROM agentlog_search_v5_meta")
        assert "common" not in {name for (name,) in c.fetchall()}
