"""One error tree: whatever a caller passes to the public API, a failure is an
``AgentlogError`` (docs/errors.md), never a bare ``TypeError``, ``KeyError`` or a
library's exception."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import agentlog
from agentlog import (
    AgentlogError,
    SessionError,
    SessionHandle,
    SessionQuery,
    SessionQueryError,
    Sessions,
    SessionTitles,
    StoreURLError,
    TitleConfig,
    export_session,
    import_log,
    open_sessions,
)

USER = {"kind": "user"}
HOSTILE: list[Any] = [
    None,
    -1,
    0,
    "",
    "x",
    1.5,
    True,
    [],
    {},
    2**70,
    "\ud800",
    "a\x00b",
    float("nan"),
    object(),
]
INTERNAL = {
    "NotJsonError": "the JSON codec's signal, turned into NonJsonDataError",
    "ZstdFrameError": "the frame scanner's signal, turned into CorruptSessionLogError",
    "MalformedRowError": "a log row's signal, turned into CorruptSessionLogError",
    "ParameterError": "a web request parameter's signal, answered with a 400",
}


@pytest.fixture
def app() -> Sessions:
    app = Sessions()
    handle = app.create_session(session_id="s", cwd="/srv")
    handle.append(
        "turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}}
    )
    handle.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    app.flush(handle)
    return app


def handle_of(app: Sessions) -> SessionHandle:
    return app.get_session("s")


CALLS: dict[str, Callable[[Sessions, Any], object]] = {
    "create_session(cwd)": lambda app, b: app.create_session(cwd=b),
    "create_session(session_id)": lambda app, b: app.create_session(session_id=b),
    "create_session(seed)": lambda app, b: app.create_session(seed=b),
    "create_session(parent_session)": lambda app, b: app.create_session(
        parent_session=b
    ),
    "create_session(created_at)": lambda app, b: app.create_session(created_at=b),
    "create_session(seed_length)": lambda app, b: app.create_session(seed_length=b),
    "get_session": lambda app, b: app.get_session(b),
    "command": lambda app, b: app.command(b).__enter__(),
    "read_events(id)": lambda app, b: app.read_events(b),
    "read_events(after)": lambda app, b: app.read_events("s", after=b),
    "read_events(limit)": lambda app, b: app.read_events("s", limit=b),
    "messages(id)": lambda app, b: app.messages(b),
    "messages(last)": lambda app, b: app.messages("s", last=b),
    "header": lambda app, b: app.header(b),
    "fork(source)": lambda app, b: app.fork(b),
    "fork(boundary)": lambda app, b: app.fork("s", boundary=b),
    "fork(child)": lambda app, b: app.fork("s", child_session_id=b),
    "repair": lambda app, b: app.repair(b),
    "flush": lambda app, b: app.flush(b) if b is not None else None,
    "close": lambda app, b: app.close(b) if b is not None else None,
    "run_with_retry": lambda app, b: app.run_with_retry("s", b),
    "append(type)": lambda app, b: handle_of(app).append(b, {}),
    "append(data)": lambda app, b: handle_of(app).append("x/y", b),
    "append(surface_op)": lambda app, b: handle_of(app).append(
        "user/message", {"content": [], "source": USER}, surface_op=b
    ),
    "append(source_event_seqs)": lambda app, b: handle_of(app).append(
        "user/message",
        {"content": [], "source": USER},
        surface_op="append",
        source_event_seqs=b,
    ),
    "SessionQuery(read_window_max)": lambda app, b: SessionQuery(
        app, read_window_max=b
    ),
    "read_title": lambda app, b: SessionQuery(app).read_title(b),
    "list_events": lambda app, b: SessionQuery(app).list_events(b),
    "read_surface": lambda app, b: SessionQuery(app).read_surface(b),
    "stream_surface": lambda app, b: SessionQuery(app).stream_surface(b),
    "read_event(id)": lambda app, b: SessionQuery(app).read_event(b, 0),
    "read_event(seq)": lambda app, b: SessionQuery(app).read_event("s", b),
    "read_event(before)": lambda app, b: SessionQuery(app).read_event("s", 0, before=b),
    "trace_session": lambda app, b: SessionQuery(app).trace_session(b),
    "trace_event(id)": lambda app, b: SessionQuery(app).trace_event(b, 0),
    "trace_event(seq)": lambda app, b: SessionQuery(app).trace_event("s", b),
    "list_summaries(limit)": lambda app, b: SessionQuery(app).list_summaries(b),
    "list_summaries(cursor)": lambda app, b: SessionQuery(app).list_summaries(cursor=b),
    "list_summaries(offset)": lambda app, b: SessionQuery(app).list_summaries(offset=b),
    "TitleConfig": lambda app, b: TitleConfig(b, 40, 80),
    "open_sessions": lambda app, b: open_sessions(b) if b is not None else None,
    "export_session": lambda app, b: export_session(app, b),
    "import_log(path)": lambda app, b: import_log(app, b),
    "import_log(bytes)": lambda app, b: import_log(app, repr(b).encode()),
    "import_log(substitutions)": lambda app, b: import_log(
        app, export_session(app, "s"), substitutions=b
    ),
}


@pytest.mark.parametrize("call", CALLS, ids=str)
def test_hostile_arguments_raise_only_agentlog_errors(app: Sessions, call: str) -> None:
    for value in HOSTILE:
        try:
            CALLS[call](app, value)
        except AgentlogError:
            pass
        except Exception as error:
            pytest.fail(f"{call} with {value!r} raised {error!r}")


def test_a_wrong_type_of_session_id_is_a_session_error(app: Sessions) -> None:
    for call in (app.get_session, app.read_events, app.messages, app.header):
        with pytest.raises(SessionError, match="session id must be a non-empty string"):
            call([])  # type: ignore[arg-type]


def test_a_query_for_a_wrong_type_of_id_finds_no_session(app: Sessions) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(app).list_events([])  # type: ignore[arg-type]
    assert caught.value.code == SessionQueryError.SESSION_NOT_FOUND
    assert str(caught.value) == 'session "[]" not found'


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit must be a positive integer"),
        ({"offset": -1}, "offset must be a non-negative integer"),
        ({"cursor": "x"}, "invalid listing cursor 'x'"),
        ({"cursor": 5}, "invalid listing cursor 5"),
    ],
)
def test_a_bad_listing_page_is_an_invalid_window(
    app: Sessions, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(app).list_summaries(**kwargs)
    assert caught.value.code == SessionQueryError.INVALID_WINDOW
    assert str(caught.value) == message


def test_read_arguments_say_what_they_accept(app: Sessions) -> None:
    with pytest.raises(SessionError) as caught:
        app.read_events("s", limit=-1)
    assert str(caught.value) == "limit must be an integer of at least 0, or None"
    assert app.read_events("s", after=-1) == app.read_events("s")


def test_a_huge_created_at_is_kept_in_the_header() -> None:
    app = Sessions()
    handle = app.create_session(created_at=2**70)
    assert handle.header["createdAt"] == 2**70


def test_a_store_url_must_be_a_string() -> None:
    with pytest.raises(StoreURLError, match="a store URL must be a string, not int"):
        open_sessions(5)  # type: ignore[arg-type]


def test_a_title_service_needs_a_config(app: Sessions) -> None:
    with pytest.raises(AgentlogError):
        SessionTitles(app, TitleConfig.from_mapping(None))


def _exception_classes() -> list[type[Exception]]:
    """Every ``Exception`` class the package defines (signals such as a
    ``KeyboardInterrupt`` subclass are control flow, not errors)."""
    found: list[type[Exception]] = []
    for info in pkgutil.walk_packages(agentlog.__path__, "agentlog."):
        if info.name.endswith("__main__"):
            continue  # running it is the command line
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, Exception) and value.__module__ == module.__name__:
                found.append(value)
    return found


def test_every_error_class_of_the_package_is_in_the_tree_or_internal() -> None:
    classes = _exception_classes()
    assert len(classes) > 20
    strays = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in classes
        if not issubclass(cls, AgentlogError)
        and cls.__name__ not in INTERNAL
        and not cls.__name__.startswith("_")  # private by name: never raised out
    ]
    assert strays == []


def test_every_public_error_class_is_exported_from_agentlog() -> None:
    public = {
        cls.__name__
        for cls in _exception_classes()
        if issubclass(cls, AgentlogError) and not cls.__name__.startswith("_")
    }
    assert public - set(agentlog.__all__) == set()


@pytest.mark.parametrize("session_id", ["a\x00b", "a\ud800b", "\udfff"])
@pytest.mark.parametrize("store", ["memory:", "sqlite"])
def test_a_new_id_no_store_can_hold_is_refused_alike_everywhere(
    session_id: str, store: str, tmp_path: Any
) -> None:
    url = store if store == "memory:" else f"sqlite:///{tmp_path}/s.db"
    app = Sessions(store=url)
    try:
        with pytest.raises(SessionError, match="must not contain NUL or lone"):
            app.create_session(session_id=session_id)
    finally:
        app.close()
