"""A small store for the model-tool tests: titles, a compaction, a fork, a caller
in the middle of a step, and a second workspace whose data must never show.

Every event time comes from a fixed clock (one second per call, from
2026-05-01T12:00:00Z), so results can be compared with ISO 8601 text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentlog.infrastructure.cli.demo.agent import ScriptedAgent

if TYPE_CHECKING:
    from agentlog.application import SessionHandle, Sessions

T0 = 1_777_636_800_000
"""2026-05-01T12:00:00Z in epoch milliseconds."""
WORKSPACE = "/srv/parser"
OTHER_WORKSPACE = "/srv/secret"
SECRETS = ("zebra", "alien", "Xenon vault", "/srv/secret")
"""Strings only the other workspace holds: no tool output may contain them."""


def fixed_clock(app: Sessions, start: int = T0, step: int = 1000) -> None:
    ticks: Iterator[int] = iter(range(start, start + 10**9, step))
    app.clock = lambda: next(ticks)


def titled(agent: ScriptedAgent, title: str) -> None:
    data = {
        "title": title,
        "messageSeqs": [agent.prompt_seq],
        "source": {"kind": "fallback"},
    }
    agent.append("session/title", data)


def turn(agent: ScriptedAgent, prompt: str, text: str, title: str = "") -> None:
    """One turn of one model step answering ``text`` (titled after the prompt)."""
    agent.start_turn(prompt)
    if title:
        titled(agent, title)
    agent.model_step(text=text)
    agent.end_step()
    agent.end_turn()


@dataclass
class Corpus:
    """The ids and seqs the tests look for."""

    plan: str = "plan"
    fork: str = "plan-fork"
    caller: str = "me"
    alien: str = "alien"
    seqs: dict[str, int] = field(default_factory=dict)
    caller_handle: SessionHandle | None = None


def build(app: Sessions) -> Corpus:
    """The store: two sessions and a fork in WORKSPACE, the caller mid-step,
    and one session in OTHER_WORKSPACE."""
    corpus = Corpus()
    fixed_clock(app)
    plan = app.create_session(cwd=WORKSPACE, session_id=corpus.plan)
    agent = ScriptedAgent(plan)
    turn(
        agent,
        "Plan the parser rewrite",
        "We will rewrite the tokenizer first",
        title="Parser rewrite plan",
    )
    agent.start_turn("Go on with the parser")
    checkpoint, _ = agent.compact("tokenizer rewrite agreed")
    corpus.seqs["checkpoint"] = checkpoint
    agent.model_step(text="Tokenizer done, the parser is next")
    agent.end_step()
    agent.end_turn()
    app.close(plan)

    child = app.fork(corpus.plan, child_session_id=corpus.fork)
    turn(
        ScriptedAgent(child),
        "Try a lexer alternative for the parser",
        "The lexer alternative is slower",
    )
    app.close(child)

    alien = app.create_session(cwd=OTHER_WORKSPACE, session_id=corpus.alien)
    turn(
        ScriptedAgent(alien),
        "zebra parser in the Xenon vault",
        "the parser of the zebra alien",
        title="alien zebra title",
    )
    app.close(alien)

    me = app.create_session(cwd=WORKSPACE, session_id=corpus.caller)
    agent = ScriptedAgent(me)
    agent.start_turn("Where did we leave the parser?")
    agent.model_step(text="Earlier parser notes")
    agent.end_step()
    corpus.seqs["earlier"] = next(
        e["seq"] for e in me.events if e["type"] == "assistant/message"
    )
    agent.model_step(calls=[("session_event_search", {"query": "parser"})])
    corpus.seqs["step"] = max(e["seq"] for e in me.events if e["type"] == "step/start")
    app.flush(me)
    corpus.caller_handle = me
    return corpus
