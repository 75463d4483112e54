"""The rules the original harness enforces when it loads one of its later logs.

What the original refuses to load is refused here too, naming the file line and the
rule; everything it loads imports (with a report of what was not exact). The mapping
itself (:mod:`~agentlog.infrastructure.formats.harness_mapping`) never refuses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import LogImportError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlog.domain.json import Envelope


def refuse_what_the_original_refuses(
    events: Sequence[Envelope], lines: Sequence[int]
) -> None:
    """Raise :class:`LogImportError` for the first event the original rejects.

    The rule: a ``turn/end`` outside any turn (the harness writes one when a turn
    fails before its react loop starts) must say which turn ended and why, an
    integer ``turn`` and a ``reason`` object; the original stops loading at one
    that does not ("malformed pre-react-loop turn/end at seq <n>").
    """
    open_turn = False
    for event, line in zip(events, lines, strict=True):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "turn/start":
            open_turn = True
        elif kind == "turn/end":
            if not open_turn and not _names_turn_and_reason(event.get("data")):
                msg = (
                    f"line {line}: malformed pre-react-loop turn/end at seq"
                    f" {event.get('seq')}: a turn/end outside any turn needs an"
                    " integer turn and a reason object (the original harness"
                    " refuses to load it)"
                )
                raise LogImportError(msg, line=line)
            open_turn = False


def _names_turn_and_reason(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and type(data.get("turn")) is int
        and isinstance(data.get("reason"), dict)
    )
