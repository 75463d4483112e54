"""The surface: which events the model sees, in order, and the rules that change it.

The live aggregate and the strict fold of a stored log
(docs/surface.md#strict-fold-and-classification) share one implementation:
:func:`check_intent` (the marker and its shape), :meth:`Surface.check` (range,
provenance, coverage, tool/result rewrite) and :meth:`Surface.apply`. :func:`fold_step`
chains them for one logged event.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import sub
from typing import TYPE_CHECKING, Final

from agentlog.domain.errors import SurfaceError, SurfaceIntentError
from agentlog.domain.json import Envelope, Json, js_number
from agentlog.domain.vocabulary import SURFACE_CODES, SURFACE_TYPES

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

MAX_SAFE_INTEGER: Final = 2**53 - 1

# One character per node type keeps the snapshot's type column a short string.
_TOOL_RESULT: Final = SURFACE_CODES["tool/result"]
_DIGEST_BYTES: Final = 9  # 72 bits: a check against accidental edits
_DIGEST_CHARS: Final = 12  # base64 of 9 bytes, no padding

CURRENT: Final = "current"
SHADOWED: Final = "shadowed"
LOG_ONLY: Final = "log-only"


@dataclass(frozen=True, slots=True)
class SurfaceNode:
    """One model-visible event and its neighbours' seqs (``None`` at the ends)."""

    seq: int
    prev: int | None
    next: int | None


@dataclass(frozen=True, slots=True)
class RangeTexts:
    """The three replace-range messages; the core and the [DEV] checker word them
    differently (the fold vs the invariant checker) but apply the same rule."""

    start_missing: str
    end_missing: str
    out_of_order: str


CORE_RANGE_TEXTS: Final = RangeTexts(
    start_missing="surface replace: start seq {start} not found in surface",
    end_missing="surface replace: end seq {end} not found in surface",
    out_of_order=(
        "surface replace: start seq {start} (index {i}) is after end seq {end} "
        "(index {j})"
    ),
)


@dataclass(frozen=True, slots=True)
class Replacement:
    """A replace the strict fold applied: its seq, range and the seqs it removed."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]

    def to_json(self) -> dict[str, Json]:
        """The seed-004 record shape ``{seq, start, end, shadowedSeqs}``."""
        return {
            "seq": self.seq,
            "start": self.start,
            "end": self.end,
            "shadowedSeqs": list(self.shadowed_seqs),
        }


@dataclass(frozen=True, slots=True)
class SurfaceFold:
    """Result of the strict fold: final node seqs and the replaces in log order."""

    nodes: list[int]
    replacements: list[Replacement]


def coverage_gaps(removed: Iterable[int], cited: Iterable[int] | None) -> list[int]:
    """The removed seqs a replace does not cite, in surface order.

    An absent citation list counts as empty, so a replace always needs provenance.
    """
    cited_set = set(cited) if cited is not None else set()
    return [seq for seq in removed if seq not in cited_set]


def coverage_text(missing: Sequence[int]) -> str:
    """The coverage message shared by the strict fold and the invariant checker."""
    listed = ", ".join(str(seq) for seq in missing)
    return (
        "surface replace: sourceEventSeqs must include every shadowed surface node; "
        f"missing {listed}"
    )


def data_digest(value: Json) -> str:
    """A short fingerprint of a JSON value for deep-equality tests.

    Keys are sorted and numbers compared by value (``1 == 1.0``, as JSON numbers in
    the seed era), while booleans stay distinct from numbers. The walk is iterative,
    so arbitrarily deep data cannot overflow the stack.
    """
    parts: list[str] = []
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):  # a literal token pushed below, never JSON
            parts.append(item[0])
        elif isinstance(item, str):
            parts.append(f"s{len(item)}:{item};")
        elif item is None:
            parts.append("n;")
        elif isinstance(item, bool):
            parts.append("t;" if item else "f;")
        elif isinstance(item, int):
            parts.append(f"i{item:x};")
        elif isinstance(item, float):
            parts.append(f"i{int(item):x};" if item.is_integer() else f"d{item.hex()};")
        elif isinstance(item, list):
            parts.append(f"[{len(item)};")
            stack.append(("];",))
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            parts.append(f"{{{len(item)};")
            stack.append(("};",))
            for key in sorted(item, reverse=True):
                stack.append(item[key])
                stack.append((f"k{len(key)}:{key};",))
        else:  # not JSON; fingerprint its repr so unequal values still differ
            parts.append(f"x{item!r};")
    text = "".join(parts).encode("utf-8", "surrogatepass")
    raw = hashlib.blake2b(text, digest_size=_DIGEST_BYTES).digest()
    return base64.b64encode(raw).decode("ascii")


def _rewrite_digest(data: Json) -> str:
    """Digest of a tool/result payload minus ``content`` (the part a rewrite keeps)."""
    if type(data) is dict:
        data = {key: value for key, value in data.items() if key != "content"}
    return data_digest(data)


def _is_seq(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _densely_text(event_type: str) -> str:
    return (
        f'session event "{event_type}" sourceEventSeqs must densely contain '
        "non-negative safe integers"
    )


def _type_code(event: Envelope) -> str | None:
    """The node type character of a surface-eligible event, else ``None``."""
    event_type = event.get("type")
    return SURFACE_CODES.get(event_type) if type(event_type) is str else None


class Surface:
    """The current surface as decision state.

    Holds node seqs in surface order, each node's type (one character) and, for
    tool/result nodes, a digest of ``data`` minus ``content`` so the rewrite rule can
    be checked without keeping payloads. Appends are O(1) amortised; a replace pays
    O(n) for the position lookup and the splice.
    """

    __slots__ = (
        "_digest_map",
        "_generation",
        "_lazy",
        "_seqs",
        "_span_cache",
        "_type_map",
    )

    def __init__(self) -> None:
        self._seqs: list[int] = []
        self._type_map: dict[int, str] = {}
        self._digest_map: dict[int, str] = {}
        # A surface restored from a snapshot keeps its node types and digests as
        # the snapshot's strings until a rule needs them: loading a long session
        # to append or to read its tail then costs no per-node work.
        self._lazy: tuple[str, str] | None = None
        self._generation = 0
        # check() and apply() of one replace resolve the same range; the cache
        # avoids a second O(n) lookup and is dropped on every mutation.
        self._span_cache: tuple[int, int, int, int] | None = None

    @property
    def _types(self) -> dict[int, str]:
        if self._lazy is not None:
            self._materialize()
        return self._type_map

    @property
    def _digests(self) -> dict[int, str]:
        if self._lazy is not None:
            self._materialize()
        return self._digest_map

    def _materialize(self) -> None:
        assert self._lazy is not None
        types, digests = self._lazy
        self._lazy = None
        seqs = self._seqs
        self._type_map = dict(zip(seqs, types, strict=True))
        result_seqs = [
            seq for seq, code in zip(seqs, types, strict=True) if code == _TOOL_RESULT
        ]
        self._digest_map = {
            seq: digests[k * _DIGEST_CHARS : (k + 1) * _DIGEST_CHARS]
            for k, seq in enumerate(result_seqs)
        }

    # ---------------------------------------------------------------- reading

    @property
    def seqs(self) -> list[int]:
        """Node seqs head to tail (a fresh list)."""
        return list(self._seqs)

    @property
    def nodes(self) -> list[SurfaceNode]:
        """Nodes head to tail with their neighbours (a fresh list)."""
        seqs = self._seqs
        last = len(seqs) - 1
        return [
            SurfaceNode(
                seq,
                seqs[index - 1] if index > 0 else None,
                seqs[index + 1] if index < last else None,
            )
            for index, seq in enumerate(seqs)
        ]

    def node(self, seq: int) -> SurfaceNode | None:
        """The node for ``seq`` with its neighbours, or ``None`` when not current."""
        if seq not in self._types:
            return None
        seqs = self._seqs
        index = seqs.index(seq)
        return SurfaceNode(
            seq,
            seqs[index - 1] if index > 0 else None,
            seqs[index + 1] if index + 1 < len(seqs) else None,
        )

    def invalidate(self) -> None:
        """Harmless: the surface is decision state, not a cache.

        See docs/events.md#the-append-pipeline.

        The seed's lazy fold could be poisoned by a bad replace and re-folded on
        demand; ours never records a bad replace, so there is nothing to drop.
        """

    @property
    def generation(self) -> int:
        """How many replaces were applied (a cache key for derived messages)."""
        return self._generation

    def __contains__(self, seq: object) -> bool:
        return seq in self._types

    def __len__(self) -> int:
        return len(self._seqs)

    def __iter__(self) -> Iterator[int]:
        """Node seqs head to tail (do not mutate the surface while iterating)."""
        return iter(self._seqs)

    def span(
        self, start: int, end: int, texts: RangeTexts = CORE_RANGE_TEXTS
    ) -> tuple[int, int]:
        """Positions ``(i, j)`` of a replace range, or :class:`SurfaceError`.

        Positions, not seq values, order the range: after a replace the
        surface is not seq-ordered, so ``start`` may be numerically above ``end``.
        """
        cached = self._span_cache
        if cached is not None and cached[0] == start and cached[1] == end:
            return cached[2], cached[3]
        if start not in self._types:
            raise SurfaceError(texts.start_missing.format(start=start))
        if end not in self._types:
            raise SurfaceError(texts.end_missing.format(end=end))
        seqs = self._seqs
        i = seqs.index(start)
        try:
            j = seqs.index(end, i)
        except ValueError:
            j = seqs.index(end)
            msg = texts.out_of_order.format(start=start, i=i, end=end, j=j)
            raise SurfaceError(msg) from None
        self._span_cache = (start, end, i, j)
        return i, j

    # ---------------------------------------------------------------- deciding

    def check(self, event: Envelope) -> None:
        """Strict-fold steps 4–6 for a new event at ``event["seq"]``.

        Expects the marker to have passed :func:`check_intent`; never mutates.
        Log-only events and unmarked events have nothing to check here.
        """
        surface_op = event.get("surfaceOp")
        if surface_op is None or _type_code(event) is None:
            return
        event_type: str = event["type"]
        removed: list[int] = []
        if type(surface_op) is dict:
            i, j = self.span(surface_op["start"], surface_op["end"])
            removed = self._seqs[i : j + 1]
        sources = event.get("sourceEventSeqs")
        if sources is not None:
            _check_provenance(event_type, sources, event["seq"])
        if removed:
            missing = coverage_gaps(removed, sources)
            if missing:
                raise SurfaceError(coverage_text(missing))
            if event_type == "tool/result":
                self._check_rewrite(removed, event.get("data"))

    def _check_rewrite(self, removed: list[int], data: Json) -> None:
        """Strict-fold step 6: a tool/result replace rewrites one result's content."""
        if len(removed) != 1:
            msg = (
                "tool/result surface replacement must rewrite exactly one current node"
            )
            raise SurfaceError(msg)
        target = removed[0]
        if self._types[target] != _TOOL_RESULT:
            msg = "tool/result surface replacement must target a current tool/result"
            raise SurfaceError(msg)
        if self._digests.get(target) != _rewrite_digest(data):
            raise SurfaceError(
                "tool/result surface replacement may change only content"
            )

    # ---------------------------------------------------------------- applying

    def apply(self, event: Envelope) -> tuple[int, ...]:
        """Apply an already checked event; returns the seqs a replace removed.

        Never validates. A stored replace whose range is not on the surface raises
        :class:`SurfaceError` (the log is corrupt).
        """
        surface_op = event.get("surfaceOp")
        code = _type_code(event)
        if surface_op is None or code is None:
            return ()
        seq: int = event["seq"]
        removed: tuple[int, ...] = ()
        if type(surface_op) is dict:
            i, j = self.span(surface_op["start"], surface_op["end"])
            removed = tuple(self._seqs[i : j + 1])
            self._seqs[i : j + 1] = [seq]
            for gone in removed:
                del self._types[gone]
                self._digests.pop(gone, None)
            self._generation += 1
        elif self._lazy is not None:
            # Keep a restored surface lazy: extend its strings instead.
            self._seqs.append(seq)
            types, digests = self._lazy
            if code == _TOOL_RESULT:
                digests += _rewrite_digest(event.get("data"))
            self._lazy = (types + code, digests)
            self._span_cache = None
            return removed
        else:
            self._seqs.append(seq)
        self._types[seq] = code
        if code == _TOOL_RESULT:
            self._digests[seq] = _rewrite_digest(event.get("data"))
        self._span_cache = None
        return removed

    # ---------------------------------------------------------------- snapshots

    def to_state(self) -> Json:
        """Compact JSON: delta-encoded seqs, one type character per node, and the
        tool/result digests concatenated in surface order.

        On the write path (a flush renews the snapshot every few dozen events,
        docs/persistence.md#snapshots), so the per-node loops run in C (``map``).
        """
        seqs = self._seqs
        deltas = list(map(sub, seqs, chain((0,), seqs)))
        if self._lazy is not None:
            return {
                "generation": self._generation,
                "seqs": deltas,
                "types": self._lazy[0],
                "digests": self._lazy[1],
            }
        digests = self._digests
        return {
            "generation": self._generation,
            "seqs": deltas,
            "types": "".join(map(self._types.__getitem__, seqs)),
            # Digests are never empty: ``filter`` drops only the nodes without one.
            "digests": "".join(filter(None, map(digests.get, seqs))),
        }

    @classmethod
    def from_state(cls, state: Json) -> Surface:
        """Rebuild a surface from :meth:`to_state` output."""
        msg = "surface snapshot state is malformed"
        try:
            seqs = list(accumulate(state["seqs"]))
            types: str = state["types"]
            digests: str = state["digests"]
            generation: int = state["generation"]
            results = types.count(_TOOL_RESULT)
        except (KeyError, TypeError, AttributeError) as error:
            raise SurfaceError(msg) from error
        if len(types) != len(seqs) or len(digests) != results * _DIGEST_CHARS:
            raise SurfaceError(msg)
        surface = cls()
        surface._seqs = seqs
        surface._lazy = (types, digests)
        surface._generation = generation
        return surface


def _check_provenance(event_type: str, sources: list[int], seq: int) -> None:
    """Strict-fold step 5 value rules (the list's type was checked by the intent)."""
    if not sources and event_type != "assistant/message":
        raise SurfaceError(
            "sourceEventSeqs must not be empty except on assistant/message"
        )
    if not all(_is_seq(source) for source in sources):
        raise SurfaceError(_densely_text(event_type))
    if len(set(sources)) != len(sources):
        raise SurfaceError("sourceEventSeqs must not contain duplicates")
    for source in sources:
        if source >= seq:
            msg = (
                f"sourceEventSeqs must reference earlier events: {source} >= current "
                f"seq {seq}"
            )
            raise SurfaceError(msg)


def check_intent(
    event_type: str, surface_op: Json, source_event_seqs: Json, seq: int
) -> None:
    """Marker steps 2–4: marker required or forbidden, then its shape.

    See docs/events.md#surface-markers.

    ``None`` counts as absent. Value ranges are left to :meth:`Surface.check`.
    """
    if event_type in SURFACE_TYPES:
        if surface_op is None:
            raise SurfaceIntentError(
                f'session event "{event_type}" is surface-eligible and requires a '
                "surfaceOp marker"
            )
        check_intent_shape(event_type, surface_op, source_event_seqs, seq)
        return
    for key, value in (
        ("surfaceOp", surface_op),
        ("sourceEventSeqs", source_event_seqs),
    ):
        if value is not None:
            raise SurfaceIntentError(
                f'session event "{event_type}" is not surface-eligible and cannot '
                f"carry {key}"
            )


def check_intent_shape(
    event_type: str, surface_op: Json, source_event_seqs: Json, seq: int
) -> None:
    """Marker step 4 (and strict-fold step 3): the marker's JSON shape."""
    if surface_op is not None and surface_op != "append":
        if type(surface_op) is not dict:
            msg = f'session event "{event_type}" carries an invalid surfaceOp'
            raise SurfaceIntentError(msg)
        if (
            surface_op.keys() != {"op", "start", "end"}
            or surface_op["op"] != "replace"
            or not _is_seq(surface_op["start"])
            or not _is_seq(surface_op["end"])
        ):
            msg = f'session event "{event_type}" carries an invalid replace surfaceOp'
            raise SurfaceIntentError(msg)
    if source_event_seqs is not None:
        if type(source_event_seqs) is not list:
            msg = f"sourceEventSeqs on event at seq {seq} must be an array when present"
            raise SurfaceIntentError(msg)
        if any(type(source) is not int for source in source_event_seqs):
            raise SurfaceIntentError(_densely_text(event_type))


def fold_step(surface: Surface, event: Envelope, index: int) -> tuple[int, ...]:
    """One strict-fold step (steps 1–6) for the event at ``index``, applied.

    Returns the seqs a replace removed. Every failure is a :class:`SurfaceError`
    carrying the core text; the surface is unchanged when it raises.
    """
    seq = event.get("seq")
    if type(seq) is not int or seq != index:
        shown = js_number(seq) if "seq" in event else "undefined"
        msg = f"session event seq {shown} is not contiguous; expected {index}"
        raise SurfaceError(msg)
    event_type = event.get("type")
    try:
        check_intent(
            event_type if type(event_type) is str else js_number(event_type),
            event.get("surfaceOp"),
            event.get("sourceEventSeqs"),
            seq,
        )
    except SurfaceIntentError as error:
        raise SurfaceError(str(error)) from None
    surface.check(event)
    return surface.apply(event)


def fold_surface(events: Sequence[Envelope]) -> SurfaceFold:
    """The strict fold of a whole log, as a query reads it.

    See docs/surface.md#strict-fold-and-classification.
    """
    surface = Surface()
    replacements: list[Replacement] = []
    for index, event in enumerate(events):
        removed = fold_step(surface, event, index)
        if removed:
            surface_op = event["surfaceOp"]
            replacements.append(
                Replacement(index, surface_op["start"], surface_op["end"], removed)
            )
    return SurfaceFold(nodes=surface.seqs, replacements=replacements)


def classify(events: Sequence[Envelope]) -> list[str]:
    """``current`` / ``shadowed`` / ``log-only`` per event, after the strict fold."""
    fold = fold_surface(events)
    current = set(fold.nodes)
    shadowed = {seq for r in fold.replacements for seq in r.shadowed_seqs}
    return [
        CURRENT if index in current else SHADOWED if index in shadowed else LOG_ONLY
        for index in range(len(events))
    ]
