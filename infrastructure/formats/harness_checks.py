"""Checks that a harness-head import kept its meaning, and the report of what did not.

Expanding packed chunk rows must give back exactly the stream the harness recorded: the
deltas of each block, concatenated, must equal the text (or tool-call arguments) of the
block's ``block-end`` chunk. References between events (``sourceEventSeqs``,
``surfaceOp``, ``messageSeqs``, ``shadowedSeqs``) must point where the seed era says
they point. Neither check changes anything; a failure is reported, never guessed away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agentlog.domain.json import dumps
from agentlog.domain.vocabulary import SURFACE_TYPES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlog.domain.json import Envelope

_TEXT_DELTAS: Final = frozenset({"text-delta", "reasoning-delta"})
_SHOWN_SEQS: Final = 8
_SHOWN_CHARS: Final = 80


def show(value: object) -> str:
    """A value as short JSON text, for a report line."""
    text = dumps(value).decode().strip()
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


class Report:
    """Report lines in first-seen order; one line per message, listing its seqs."""

    def __init__(self) -> None:
        self._seqs: dict[str, list[Any]] = {}

    def note(self, message: str, seq: Any = None) -> None:
        """Record ``message``, for the event at ``seq`` when given."""
        seqs = self._seqs.setdefault(message, [])
        if seq is not None:
            seqs.append(seq)

    def lines(self) -> list[str]:
        """The report, with each message's seqs appended."""
        out = []
        for message, seqs in self._seqs.items():
            if not seqs:
                out.append(message)
                continue
            shown = ", ".join(str(seq) for seq in seqs[:_SHOWN_SEQS])
            more = f", ... ({len(seqs)} events)" if len(seqs) > _SHOWN_SEQS else ""
            label = "seq" if len(seqs) == 1 else "seqs"
            out.append(f"{message} ({label} {shown}{more})")
        return out


@dataclass
class _Block:
    """The deltas seen so far for one stream block of one step."""

    kind: Any = None
    parts: list[str] = field(default_factory=list)
    call_id: Any = None
    name: Any = None
    packed: bool = False


def _chunk_of(event: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    if not isinstance(event, dict) or event.get("type") != "assistant/chunk":
        return None
    data = event.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("chunk"), dict):
        return None
    return data, data["chunk"]


def check_blocks(
    events: Sequence[Envelope], packed: Sequence[tuple[int, int, str]], report: Report
) -> None:
    """Check every expanded packed row against its block's ``block-end`` chunk.

    ``packed`` lists ``(first seq, members, row type)`` per expanded row. A block fed
    by a packed row whose concatenated deltas differ from its ``block-end``, or that
    never ends, is reported.
    """
    packed_seqs: set[int] = set()
    for first, count, _ in packed:
        packed_seqs.update(range(first, first + count))
    open_blocks: dict[tuple[Any, Any, Any], _Block] = {}
    for event in events:
        found = _chunk_of(event)
        if found is None:
            continue
        data, chunk = found
        key = (data.get("turn"), data.get("step"), chunk.get("index"))
        kind = chunk.get("type") if isinstance(chunk.get("type"), str) else None
        if kind == "block-start":
            open_blocks[key] = _Block(kind=chunk.get("blockType"))
        elif kind in _TEXT_DELTAS or kind == "tool-call-delta":
            block = open_blocks.setdefault(key, _Block())
            text = chunk.get("text" if kind in _TEXT_DELTAS else "argumentsDelta")
            block.parts.append(text if isinstance(text, str) else "")
            block.call_id = chunk.get("id", block.call_id)
            block.name = chunk.get("name", block.name)
            block.packed = block.packed or event.get("seq") in packed_seqs
        elif kind == "block-end":
            block = open_blocks.pop(key, _Block())
            if block.packed:
                _compare(block, chunk.get("block"), event.get("seq"), report)
    for (turn, step, index), block in open_blocks.items():
        if block.packed:
            report.note(
                f"packed chunks of turn {turn}, step {step}, block {index} have no"
                " block-end; their expansion could not be checked"
            )


def _compare(block: _Block, ended: Any, seq: Any, report: Report) -> None:
    joined = "".join(block.parts)
    if not isinstance(ended, dict):
        report.note("block-end without a block; packed chunks not checked", seq)
        return
    if ended.get("type") == "tool-call":
        same = (
            ended.get("arguments") == joined
            and ended.get("id") == block.call_id
            and (block.name is None or ended.get("name") == block.name)
        )
    else:
        same = ended.get("text") == joined
    if not same:
        report.note(
            "block-end differs from the concatenated deltas of its block (packed"
            " chunks expanded verbatim)",
            seq,
        )


def check_references(events: Sequence[Envelope], report: Report) -> None:
    """Check that references name earlier events of the kind the seed era expects."""
    for event in events:
        if not isinstance(event, dict):
            continue
        seq = event.get("seq")
        kind = event.get("type")
        data = event.get("data")
        data = data if isinstance(data, dict) else {}
        sources = event.get("sourceEventSeqs")
        if isinstance(sources, list):
            for ref in sources:
                problem = _source_problem(events, event, data, ref)
                if problem:
                    _note_ref(report, kind, seq, "sourceEventSeqs", ref, problem)
        surface_op = event.get("surfaceOp")
        if isinstance(surface_op, dict):
            for key in ("start", "end"):
                ref = surface_op.get(key)
                problem = _earlier(events, seq, ref) or _surface(events, ref)
                if problem:
                    _note_ref(report, kind, seq, f"surfaceOp.{key}", ref, problem)
        for field_name, expected in (
            ("messageSeqs", "user/message"),
            ("shadowedSeqs", None),
        ):
            refs = data.get(field_name) if kind in _REF_OWNERS[field_name] else None
            for ref in refs if isinstance(refs, list) else []:
                problem = _earlier(events, seq, ref) or (
                    _typed(events, ref, expected) if expected else _surface(events, ref)
                )
                if problem:
                    _note_ref(report, kind, seq, field_name, ref, problem)


_REF_OWNERS: Final = {
    "messageSeqs": frozenset({"session/title", "session/title-llm-request"}),
    "shadowedSeqs": frozenset({"compact/summary"}),
}


def _note_ref(
    report: Report, kind: Any, seq: Any, name: str, ref: Any, problem: str
) -> None:
    report.note(f"{kind}: {name} entry {ref!r} {problem}; kept as it is", seq)


def _earlier(events: Sequence[Envelope], seq: Any, ref: Any) -> str | None:
    if type(ref) is not int or type(seq) is not int or not 0 <= ref < seq:
        return "is not an earlier seq"
    if ref >= len(events) or not isinstance(events[ref], dict):
        return "names no event"
    return None


def _surface(events: Sequence[Envelope], ref: Any) -> str | None:
    kind = events[ref].get("type")
    return None if kind in SURFACE_TYPES else f"names a {kind}, not a surface event"


def _typed(events: Sequence[Envelope], ref: Any, expected: str) -> str | None:
    kind = events[ref].get("type")
    return None if kind == expected else f"names a {kind}, not a {expected}"


def _source_problem(
    events: Sequence[Envelope], event: Envelope, data: dict[str, Any], ref: Any
) -> str | None:
    """Provenance by type: chunks of the same step, the call of the same id."""
    problem = _earlier(events, event.get("seq"), ref)
    if problem:
        return problem
    target = events[ref]
    target_data = target.get("data")
    target_data = target_data if isinstance(target_data, dict) else {}
    kind = event.get("type")
    if kind == "assistant/message":
        same_step = all(target_data.get(k) == data.get(k) for k in ("turn", "step"))
        if target.get("type") != "assistant/chunk" or not same_step:
            return f"names a {target.get('type')}, not a chunk of the same step"
    elif kind == "tool/result" and event.get("surfaceOp") == "append":
        answers = target_data.get("callId") == data.get("callId")
        if target.get("type") not in ("tool/call", "tool/result") or not answers:
            return f"names a {target.get('type')}, not the call it answers"
    return None
