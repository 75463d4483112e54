"""Tool-pairing balance of surface cuts: core scenarios 115–125."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog.domain.errors import SurfaceError
from agentlog.domain.pairing import is_tool_pairing_balanced
from agentlog.domain.surface import Surface, fold_step
from tests.builders import SE, SS, TE, TS, A, Append, C, R, U, message, replace, text
from tests.builders import call_block as call
from tests.builders import log as _log

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope


def log(*items: Append) -> list[Envelope]:
    return _log(*items, time=0)


class Cuts:
    """``before(x)`` / ``after(x)`` on the strict surface of a log (after = x.next)."""

    def __init__(self, *items: Append) -> None:
        self.events = log(*items)
        self.surface = Surface()
        for index, envelope in enumerate(self.events):
            fold_step(self.surface, envelope, index)

    def before(self, seq: int | None) -> bool:
        return is_tool_pairing_balanced(self.surface.nodes, self.events, seq)

    def after(self, seq: int) -> bool:
        node = self.surface.node(seq)
        assert node is not None
        return self.before(node.next)


SESSION = (TS(), U("go"), SS(), A(text("t"), call("c1")), C("c1"), R("c1"), SE(), TE())


def test_core_115_cuts_before() -> None:
    cuts = Cuts(*SESSION)
    assert cuts.before(1) is True
    assert cuts.before(3) is True
    assert cuts.before(5) is False


def test_core_116_cuts_after() -> None:
    cuts = Cuts(*SESSION)
    assert cuts.after(5) is True
    assert cuts.after(3) is False
    assert cuts.after(1) is True


def test_core_117_open_step() -> None:
    assert Cuts(TS(), SS(), A(call("c1"))).after(2) is False


def test_core_118_steering_after_a_closed_step() -> None:
    cuts = Cuts(TS(), SS(), A(text("t")), SE(), message("steering/message"))
    assert cuts.after(4) is True


def test_core_119_user_message_before_any_step() -> None:
    assert Cuts(TS(), U("go")).after(1) is True


def test_core_120_two_calls() -> None:
    cuts = Cuts(TS(), SS(), A(call("c1"), call("c2")), R("c1"), R("c2"))
    assert cuts.after(3) is False
    assert cuts.after(4) is True


def test_core_121_context_inside_an_open_pair() -> None:
    cuts = Cuts(TS(), SS(), A(call("c1")), message("context/message"), R("c1"))
    assert cuts.before(3) is False
    assert cuts.after(3) is False


def test_core_122_injection_turn() -> None:
    cuts = Cuts(TS(kind="injection"), message("context/message"), TE())
    assert cuts.before(1) is True
    assert cuts.after(1) is True


def test_core_123_checkpoint_at_the_head() -> None:
    compact = {"kind": "plugin", "plugin": "compact"}
    checkpoint = U("summary", source=compact, op=replace(1, 5), src=[1, 3, 5])
    cuts = Cuts(
        *SESSION,  # seqs 0..7: U@1, A(call)@3, R@5
        TS(2),
        checkpoint,  # @9
        SS(2, 1),
        A(text("done"), turn=2),  # @11
    )
    assert cuts.surface.seqs == [9, 11]
    assert cuts.before(9) is True
    assert cuts.after(9) is True


def test_core_124_result_without_call_is_corrupt() -> None:
    cuts = Cuts(TS(), SS(), R("c1"))
    with pytest.raises(SurfaceError) as caught:
        cuts.before(None)
    assert str(caught.value) == (
        "tool-pairing balance: tool/result at surface seq 2 has no matching "
        "tool-call (corrupt surface)"
    )


def test_core_125_cut_not_on_the_surface_is_the_tail() -> None:
    cuts = Cuts(*SESSION)
    assert cuts.before(4) is cuts.before(None) is True
    open_call = Cuts(TS(), SS(), A(call("c1")), C("c1"))
    assert open_call.before(3) is open_call.before(None) is False


def test_plain_seqs_and_mappings_are_accepted() -> None:
    cuts = Cuts(*SESSION)
    by_seq = {e["seq"]: e for e in cuts.events}
    assert is_tool_pairing_balanced(cuts.surface.seqs, by_seq, 5) is False
