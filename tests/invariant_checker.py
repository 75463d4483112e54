"""The seed's whole development-mode invariant checker (steps 1–6), for tests.

The package checks step 5 at append (:class:`~agentlog.domain.invariants.TurnInvariants`)
and steps 1–4 through the surface rules; this checker runs all six on its own, event
by event, with the seed's texts, so tests can vet a log the way the seed's
``dsh-invariants`` plugin did (docs/invariants.md#the-checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agentlog.domain.errors import InvariantError, SurfaceError, SurfaceIntentError
from agentlog.domain.invariants import TurnInvariants
from agentlog.domain.json import js_number as _js
from agentlog.domain.surface import (
    RangeTexts,
    Surface,
    check_intent_shape,
    coverage_gaps,
    coverage_text,
)
from agentlog.domain.vocabulary import SURFACE_TYPES

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope

DEV_RANGE_TEXTS: Final = RangeTexts(
    start_missing="surface replace: start seq {start} is not on the surface",
    end_missing="surface replace: end seq {end} is not on the surface",
    out_of_order=(
        "surface replace: start seq {start} (pos {i}) is after end seq {end} "
        "(pos {j}) on the surface"
    ),
)


class InvariantChecker:
    """The full checker of docs/invariants.md (steps 1–6) for one session.

    Rejects before changing anything: a rejected event leaves the checker as it was.
    """

    __slots__ = ("known_seqs", "last_seq", "surface", "turns")

    def __init__(self) -> None:
        self.last_seq: int = -1
        self.known_seqs: set[int] = set()
        self.surface = Surface()
        self.turns = TurnInvariants()

    def feed(self, event: Envelope) -> None:
        """Check ``event`` against steps 1–5, then record it (step 6)."""
        self.check(event)
        self.apply(event)

    def check(self, event: Envelope) -> None:
        """Raise :class:`InvariantError` for the first broken rule; never mutates."""
        seq = event.get("seq")
        event_type = event.get("type")
        if type(seq) is not int or seq <= self.last_seq:
            shown = _js(seq) if "seq" in event else "undefined"
            msg = f"seq must strictly increase: saw {shown} after {self.last_seq}"
            raise InvariantError(msg)
        sources = event.get("sourceEventSeqs")
        surface_op = event.get("surfaceOp")
        if event_type not in SURFACE_TYPES:
            for key, value in (
                ("sourceEventSeqs", sources),
                ("surfaceOp", surface_op),
            ):
                if value is not None:
                    detail = f"{_js(event_type)} cannot carry {key} (non-surface event)"
                    raise InvariantError(detail)
        try:
            check_intent_shape(str(event_type), surface_op, sources, seq)
        except SurfaceIntentError as error:
            raise InvariantError(str(error)) from None
        if sources is not None:
            self._check_sources(sources, seq)
        if type(surface_op) is dict:
            self._check_replace(surface_op, sources)
        self.turns.check(event)

    def _check_sources(self, sources: list[int], seq: int) -> None:
        """Step 3: provenance must be a non-empty set of earlier, known seqs."""
        if not sources:
            msg = "sourceEventSeqs must not be empty when present"
            raise InvariantError(msg)
        if len(set(sources)) != len(sources):
            raise InvariantError("sourceEventSeqs must not contain duplicates")
        for source in sources:
            if source >= seq:
                msg = (
                    f"sourceEventSeqs must reference earlier events: {source} >= "
                    f"current seq {seq}"
                )
                raise InvariantError(msg)
            if source not in self.known_seqs:
                raise InvariantError(f"sourceEventSeqs references unknown seq {source}")

    def _check_replace(
        self, surface_op: dict[str, int], sources: list[int] | None
    ) -> None:
        """Step 4: the replace range is on the tracked surface and fully cited."""
        try:
            i, j = self.surface.span(
                surface_op["start"], surface_op["end"], DEV_RANGE_TEXTS
            )
        except SurfaceError as error:
            raise InvariantError(str(error)) from None
        missing = coverage_gaps(self.surface.seqs[i : j + 1], sources)
        if missing:
            raise InvariantError(coverage_text(missing))

    def apply(self, event: Envelope) -> None:
        """Record an event the checker accepted."""
        seq: int = event["seq"]
        self.last_seq = seq
        self.surface.apply(event)
        self.turns.apply(event)
        self.known_seqs.add(seq)
