"""Sessions that carry marker strings, and the scans that prove them gone.

Each marked session holds three distinct markers: one in a user message, one in
a tool result and one in its title. The markers are mixed-case words, so a
case-insensitive byte search also finds the lower-cased tokens FTS5 keeps.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlog import SessionQuery
from tests.builders import SE, SS, TE, TS, A, Acall, C, R, U, text

if TYPE_CHECKING:
    from agentlog import Sessions
    from agentlog.application.handle import SessionHandle

REASON = "user asked to be forgotten"


def markers(tag: str | None = None) -> tuple[str, str, str]:
    """Three fresh marker words (message, tool result, title)."""
    tag = tag or uuid.uuid4().hex[:10]
    return (f"ZqMsg{tag}Alpha", f"ZqTool{tag}Beta", f"ZqTitle{tag}Gamma")


def write_marked(
    app: Sessions, session_id: str, marks: tuple[str, str, str], **create: Any
) -> SessionHandle:
    """A flushed session: a turn with the message and tool-result markers, then
    an out-of-band title with the third."""
    message, tool, title = marks
    handle = app.create_session(session_id=session_id, cwd="/srv/app", **create)
    for item in (
        TS(1),
        U(f"please remember {message} for me"),
        SS(1, 1),
        Acall("c1"),
        C("c1"),
        R("c1", content=[text(f"the tool printed {tool} and exited")]),
        SE(1, 1),
        SS(1, 2),
        A("done", step=2),
        SE(1, 2),
        TE(1),
    ):
        item.to(handle.aggregate)
    app.flush(handle)
    app.append_out_of_band(
        handle,
        "session/title",
        {"title": f"About {title}", "messageSeqs": [1], "source": {"kind": "fallback"}},
    )
    return handle


def append_turn(handle: SessionHandle, prompt: str = "more") -> None:
    """Three more events (a turn with one prompt), not flushed."""
    turn = handle.aggregate.turns.next_turn
    for item in (TS(turn), U(prompt), TE(turn)):
        item.to(handle.aggregate)


def index_everything(app: Sessions, marks: tuple[str, str, str]) -> None:
    """Make every view and the search index hold the session (and check they do)."""
    query = SessionQuery(app)
    listed = query.list_summaries(limit=100)
    assert any(marks[2] in (s.title or "") for s in listed.items), listed
    for mark in marks[:2]:  # titles are not indexed (docs/search.md)
        assert query.search_sessions(mark).items, mark


def files_of(database: Path) -> list[Path]:
    """The SQLite file and its WAL and shared-memory files, where they exist."""
    paths = [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    return [path for path in paths if path.exists()]


def found_in_files(database: Path, marks: tuple[str, ...]) -> list[str]:
    """Which markers occur in the database's files (case-insensitive bytes)."""
    blobs = [path.read_bytes().lower() for path in files_of(database)]
    return [
        mark for mark in marks if any(mark.lower().encode() in blob for blob in blobs)
    ]
