"""``agentlog demo``: a scripted agent session, end to end, through the public API.

A newcomer's first run. It writes what an agent loop writes — turns, streamed chunks,
parallel tool calls, injected context, steering, a todo list, a title, a compaction
(session-core §4.6), a crash mid-turn and its repair on reload, a fork — so every
other command has a realistic session to read. Only ids and times vary between runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from eventsourcing.persistence import ApplicationRecorder, EventStore

from application.query import SessionQuery
from application.sessions import Sessions
from domain.errors import SessionError, SurfaceError
from domain.json import dumps
from domain.pairing import is_tool_pairing_balanced
from domain.title import TitleConfig, plan_fallback_title
from infrastructure.store import (
    open_sessions,
    parse_store_url,
    store_url_from_environment,
)

if TYPE_CHECKING:
    from application.sessions import SessionHandle
    from domain.json import Envelope

Narrate = Callable[[str], None]
ToolCall = tuple[str, Mapping[str, Any]]
"""A tool name and its arguments (the model writes them as JSON text)."""

DEMO_CWD = "/workspace/weather-api"
TITLE_CONFIG = TitleConfig(
    fallback_max_words=5, fallback_max_bytes=40, max_title_bytes=80
)
"""The title limits of the harness's demo spine (persistence-query §2.4)."""
COMPACT_PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the "
    "conversation to free up context. Treat the captured context as established "
    "background and build on it without restating it. Continue the task directly "
    "from the messages that follow, without acknowledging this checkpoint."
)
USER: dict[str, Any] = {"kind": "user"}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split text at spaces into about ``count`` stream deltas (they join back)."""
    words = text.split(" ")
    size = max(1, -(-len(words) // count))
    parts = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [part + " " for part in parts[:-1]] + parts[-1:]


class ScriptedAgent:
    """Writes a session the way an agent loop does, one method per loop action.

    Each model step streams its output as ``assistant/chunk`` events, then records
    the assembled ``assistant/message`` citing those chunks, then one ``tool/call``
    per requested call; results cite their call. Every append goes through the
    public :meth:`SessionHandle.append`, so every rule of the spec is checked.
    """

    def __init__(self, handle: SessionHandle) -> None:
        self.handle = handle
        events = handle.events
        self.turn = max(
            (e["data"]["turn"] for e in events if e["type"] == "turn/start"), default=0
        )
        self._calls = sum(1 for e in events if e["type"] == "tool/call")
        self.step = 0
        self.prompt_seq = -1
        self.pending: dict[str, int] = {}
        """Tool calls of the open step that have no result yet: call id -> seq."""

    def append(
        self,
        event_type: str,
        data: Any,
        surface_op: Any = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        """Append one event; returns its seq."""
        event = self.handle.append(
            event_type,
            data,
            surface_op=surface_op,
            source_event_seqs=None if sources is None else list(sources),
        )
        return int(event["seq"])

    # ------------------------------------------------------------------ turns

    def start_turn(self, prompt: str) -> None:
        """A drained user prompt opens a turn and joins the surface."""
        self.turn += 1
        self.step = 0
        trigger = {"kind": "message", "source": USER}
        self.append("turn/start", {"turn": self.turn, "trigger": trigger})
        content = [text_block(prompt)]
        self.prompt_seq = self.append(
            "user/message", {"content": content, "source": USER}, "append"
        )

    def end_turn(self, reason: str = "completed") -> int:
        return self.append("turn/end", {"turn": self.turn, "reason": {"kind": reason}})

    def inject_context(self, text: str, plugin: str) -> None:
        """Context a plugin adds (not a prompt): the model sees it in an envelope."""
        source = {"kind": "plugin", "plugin": plugin}
        data = {"content": [text_block(text)], "source": source}
        self.append("context/message", data, "append")

    def steer(self, text: str) -> None:
        """The user steers a running turn between two steps."""
        data = {"turn": self.turn, "content": [text_block(text)], "source": USER}
        self.append("steering/message", data, "append")

    def write_todos(self, *items: tuple[str, str]) -> None:
        todos = [{"content": content, "status": status} for content, status in items]
        self.append("todo/write", {"todos": todos})

    def title(self) -> str | None:
        """The fallback title of the first prompt, if the session has none yet."""
        data = plan_fallback_title(self.handle.events, TITLE_CONFIG)
        if data is None:
            return None
        self.append("session/title", data)
        return str(data["title"])

    # ------------------------------------------------------------------ steps

    def model_step(
        self,
        *,
        reasoning: str | None = None,
        text: str | None = None,
        calls: Sequence[ToolCall] = (),
    ) -> list[str]:
        """Open a step, stream the model's output, record it; returns the call ids."""
        self.step += 1
        where = {"turn": self.turn, "step": self.step}
        self.append("step/start", where)
        chunks: list[int] = []
        blocks: list[dict[str, Any]] = []

        def chunk(body: dict[str, Any]) -> None:
            chunks.append(self.append("assistant/chunk", {**where, "chunk": body}))

        for kind, value in (("reasoning", reasoning), ("text", text)):
            if value is None:
                continue
            index = len(blocks)
            chunk({"type": "block-start", "index": index, "blockType": kind})
            for piece in _pieces(value):
                chunk({"type": f"{kind}-delta", "index": index, "text": piece})
            blocks.append({"type": kind, "text": value})
            chunk({"type": "block-end", "index": index, "block": blocks[-1]})
        calls_made: list[tuple[str, dict[str, Any]]] = []
        for name, arguments in calls:
            self._calls += 1
            call_id = f"call_{self._calls}"
            index = len(blocks)
            raw = dumps(dict(arguments)).decode()
            chunk({"type": "block-start", "index": index, "blockType": "tool-call"})
            half = len(raw) // 2
            for number, piece in enumerate((raw[:half], raw[half:])):
                delta: dict[str, Any] = {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": call_id,
                }
                if number == 0:
                    delta["name"] = name
                chunk({**delta, "argumentsDelta": piece})
            block = {"type": "tool-call", "id": call_id, "name": name, "arguments": raw}
            blocks.append(block)
            calls_made.append((call_id, block))
            chunk({"type": "block-end", "index": index, "block": block})
        usage = {
            "inputTokens": 900 + 250 * self.step,
            "outputTokens": 40 + sum(len(dumps(block)) // 4 for block in blocks),
            "cacheReadTokens": 2048,
        }
        chunk({"type": "usage", "usage": usage})
        finish = "tool-calls" if calls else "stop"
        chunk({"type": "finish", "reason": {"kind": finish}})
        message = {**where, "content": blocks, "usage": usage}
        self.append("assistant/message", message, "append", chunks)
        for call_id, block in calls_made:
            call = {
                **where,
                "callId": call_id,
                "name": block["name"],
                "arguments": block["arguments"],
            }
            self.pending[call_id] = self.append("tool/call", call)
        return [call_id for call_id, _ in calls_made]

    def tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """A tool finished: its result joins the surface and cites its call."""
        call_seq = self.pending.pop(call_id)
        data = {
            "turn": self.turn,
            "step": self.step,
            "callId": call_id,
            "content": [text_block(output)],
            "isError": is_error,
        }
        self.append("tool/result", data, "append", [call_seq])

    def end_step(self) -> None:
        self.append("step/end", {"turn": self.turn, "step": self.step})

    # ------------------------------------------------------------- compaction

    def compact(self, summary: str) -> tuple[int, list[int]]:
        """Replace everything before this turn's prompt with a checkpoint (§4.6).

        Runs inside the open turn and outside any step, like the loop's pre-step
        seam. Both edges of the region must be balanced cuts (no tool call split
        from its result). Returns the checkpoint's seq and the seqs it shadows.
        """
        nodes = self.handle.surface.seqs
        events = {event["seq"]: event for event in self.handle.events}
        end_index = nodes.index(self.prompt_seq) - 1
        if end_index < 0:
            msg = "compactRegion: nothing to compact before the prompt"
            raise SurfaceError(msg)
        start, end = nodes[0], nodes[end_index]
        after = nodes[end_index + 1]
        for edge, cut in (("start", start), ("end", after)):
            if not is_tool_pairing_balanced(nodes, events, cut):
                msg = f"compactRegion: {edge} seq {cut} is not a balanced boundary"
                raise SurfaceError(msg)
        shadowed = nodes[: end_index + 1]
        start_seq = self.append("compact/start", {"turn": self.turn})
        try:
            tokens = sum(len(dumps(events[seq]["data"])) for seq in shadowed) // 4
            raw_summary = [text_block(summary)]
            summary_seq = self.append(
                "compact/summary",
                {
                    "summary": raw_summary,
                    "shadowedRange": {"start": start, "end": end},
                    "shadowedSeqs": shadowed,
                    "shadowedTokenCount": tokens,
                },
            )
            framed = [
                text_block(COMPACT_PREAMBLE + "\n\n<compacted-summary>"),
                *raw_summary,
                text_block("</compacted-summary>"),
            ]
            source = {"kind": "plugin", "plugin": "compact"}
            checkpoint = self.append(
                "user/message",
                {"content": framed, "source": source},
                {"op": "replace", "start": start, "end": end},
                [start_seq, summary_seq, *shadowed],
            )
        except SessionError as error:
            # A failed compaction releases the lock and leaves the surface as it was.
            self.append("compact/end", {"turn": self.turn, "error": str(error)})
            raise
        self.append("compact/end", {"turn": self.turn})
        return checkpoint, shadowed


# ---------------------------------------------------------------- the script


def _turn_one(agent: ScriptedAgent) -> str | None:
    agent.start_turn(
        "Add a /health endpoint to the weather API and make sure the tests pass."
    )
    title = agent.title()
    agent.inject_context(
        "AGENTS.md (repository root): handlers live in api/routes.py; "
        "run the tests with `pytest -q`.",
        plugin="agents-md",
    )
    agent.write_todos(
        ("Read the router and its tests", "in_progress"),
        ("Add the /health handler", "pending"),
        ("Run the tests", "pending"),
    )
    first, second = agent.model_step(
        reasoning="The router and its tests tell me where a new handler goes.",
        text="Let me read the router and its tests first.",
        calls=[
            ("read_file", {"path": "api/routes.py"}),
            ("read_file", {"path": "tests/test_routes.py"}),
        ],
    )
    # Parallel calls: both run at once; the second one finishes first.
    agent.tool_result(second, "def test_forecast(client): ...  # 11 tests")
    agent.tool_result(first, "router = APIRouter()\n@router.get('/forecast') ...")
    agent.end_step()
    agent.steer("Please include the service version in the health payload.")
    agent.write_todos(
        ("Read the router and its tests", "completed"),
        ("Add the /health handler", "in_progress"),
        ("Run the tests", "pending"),
    )
    (edit,) = agent.model_step(
        text="Adding GET /health, returning the status and the version as asked.",
        calls=[
            ("edit_file", {"path": "api/routes.py", "insert": "@router.get('/health')"})
        ],
    )
    agent.tool_result(edit, "Applied 1 edit to api/routes.py")
    agent.end_step()
    (tests,) = agent.model_step(calls=[("run", {"command": "pytest -q"})])
    agent.tool_result(tests, "12 passed in 0.41s")
    agent.end_step()
    agent.write_todos(
        ("Read the router and its tests", "completed"),
        ("Add the /health handler", "completed"),
        ("Run the tests", "completed"),
    )
    agent.model_step(
        text="Done: GET /health returns {status, version}; all 12 tests pass."
    )
    agent.end_step()
    agent.end_turn()
    return title


def _turn_two(agent: ScriptedAgent) -> tuple[int, list[int], int]:
    agent.start_turn("Now add request logging middleware.")
    checkpoint, shadowed = agent.compact(
        "The user asked for a /health endpoint. GET /health in api/routes.py now "
        "returns the status and the service version; all 12 tests pass."
    )
    app_py, grep = agent.model_step(
        reasoning="Middleware is registered where the app is built.",
        text="Looking at how the app is assembled and whether logging exists.",
        calls=[
            ("read_file", {"path": "api/app.py"}),
            ("grep", {"pattern": "logging", "path": "api/"}),
        ],
    )
    agent.tool_result(app_py, "app = FastAPI()\napp.include_router(router)")
    agent.tool_result(grep, "no matches")
    agent.end_step()
    (edit,) = agent.model_step(
        text="Adding a middleware that logs method, path, status and duration.",
        calls=[
            ("edit_file", {"path": "api/app.py", "insert": "@app.middleware('http')"})
        ],
    )
    agent.tool_result(edit, "Applied 1 edit to api/app.py")
    agent.end_step()
    agent.model_step(text="Request logging is in place in api/app.py.")
    agent.end_step()
    return checkpoint, shadowed, agent.end_turn()


def _turn_three_crashes(agent: ScriptedAgent) -> None:
    """A turn whose process dies while a tool runs (flushed up to that point)."""
    agent.start_turn("Run the full test suite and the linter.")
    _running, lint = agent.model_step(
        text="Running both in parallel.",
        calls=[("run", {"command": "pytest"}), ("run", {"command": "ruff check ."})],
    )
    agent.tool_result(lint, "All checks passed!")
    # pytest is still running when the process dies: it never gets a result.


def _fork_turn(agent: ScriptedAgent) -> None:
    agent.start_turn("Run only the fast tests this time.")
    (tests,) = agent.model_step(
        text="Running the fast tests.",
        calls=[("run", {"command": "pytest -m 'not slow'"})],
    )
    agent.tool_result(tests, "12 passed, 3 deselected in 0.38s")
    agent.end_step()
    agent.model_step(text="The fast tests pass (12 passed, 3 slow ones deselected).")
    agent.end_step()
    agent.end_turn()


# ---------------------------------------------------------- crash and reload


class _RestartedMemorySessions(Sessions):
    """A second application over the first one's in-memory recorders.

    On ``memory:`` the store lives in the process, so "open the store again" means
    new application objects over the same recorders, as a new process would find
    a database. Only the library's ``construct_*`` hooks are overridden.
    """

    name: ClassVar[str] = "Sessions"  # type: ignore[misc]

    def __init__(self, previous: Sessions) -> None:
        self._previous = previous
        super().__init__({"PERSISTENCE_MODULE": "eventsourcing.popo"})

    def construct_recorder(self) -> ApplicationRecorder:
        return self._previous.recorder

    def construct_snapshot_store(self) -> EventStore[str]:
        snapshots = self._previous.snapshots
        assert snapshots is not None
        return EventStore(mapper=self.mapper, recorder=snapshots.recorder)


def restart(crashed: Sessions, url: str) -> Sessions:
    """Open the store again as a new process would; the crashed one never closes.

    Its connections go away the way a dead process's do (no flush: it holds no
    unflushed events, so nothing can be written).
    """
    if parse_store_url(url).env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        return _RestartedMemorySessions(crashed)
    fresh = open_sessions(url)
    crashed.factory.close()
    return fresh


# ------------------------------------------------------------------- driver


@dataclass
class DemoResult:
    """What the demo wrote, and the application to read it with (keep it open)."""

    app: Sessions
    query: SessionQuery
    session_id: str
    fork_id: str
    title: str | None
    checkpoint_seq: int
    shadowed_seqs: list[int]
    fork_boundary: int
    closers: list[Envelope]


def run_demo(url: str | None = None, narrate: Narrate = print) -> DemoResult:
    """Drive the scripted session on the store ``url`` names; narrate each stage."""
    url = store_url_from_environment(url)
    app = open_sessions(url)
    handle = app.create_session(cwd=DEMO_CWD)
    agent = ScriptedAgent(handle)
    session_id = handle.id
    narrate(f"session {session_id} (cwd {DEMO_CWD})")

    title = _turn_one(agent)
    app.flush(handle)
    narrate(
        f"turn 1: prompt, title “{title}”, AGENTS.md context, todos, 4 streamed "
        f"steps, parallel tool calls, steering; flushed at seq {handle.seq - 1}"
    )
    checkpoint, shadowed, boundary = _turn_two(agent)
    app.flush(handle)
    narrate(
        f"turn 2: compaction replaced {len(shadowed)} surface events "
        f"(seq {shadowed[0]} to {shadowed[-1]}) with the checkpoint at seq "
        f"{checkpoint}; 3 steps; flushed at seq {handle.seq - 1}"
    )
    _turn_three_crashes(agent)
    app.flush(handle)
    stored = handle.seq
    narrate(
        f"turn 3: flushed mid-step at seq {stored - 1} (one tool still running), "
        "then the process crashes"
    )

    del agent, handle
    app = restart(app, url)
    handle = app.get_session(session_id)
    closers = app.read_events(session_id, after=stored - 1)
    kinds = ", ".join(_closer_label(event) for event in closers)
    narrate(f"reload: get_session repaired the open turn by appending {kinds}")

    child = app.fork(session_id, boundary=boundary)
    _fork_turn(ScriptedAgent(child))
    fork_id = child.id
    app.close(child)
    app.close(handle)
    narrate(
        f"fork: {fork_id} inherits seqs 0..{boundary} (up to turn 2's end) "
        "and retries turn 3 its own way"
    )
    return DemoResult(
        app=app,
        query=SessionQuery(app),
        session_id=session_id,
        fork_id=fork_id,
        title=title,
        checkpoint_seq=checkpoint,
        shadowed_seqs=shadowed,
        fork_boundary=boundary,
        closers=closers,
    )


def _closer_label(event: Envelope) -> str:
    data = event["data"]
    if event["type"] == "tool/result":
        return f"an interrupted tool/result for {data['callId']}"
    if event["type"] == "turn/end":
        return f"turn/end ({data['reason']['kind']})"
    return str(event["type"])
