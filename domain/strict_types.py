"""Strict event types: an undeclared type in a core family is a mistake.

The log's vocabulary is open (docs/events.md#envelope): a type nobody declared is
stored as a log-only plugin event, whatever its family. That keeps a newer
producer's logs loading, but it also stores a typo such as ``user/mesage`` silently,
and the typo never reaches the message history. A writer that knows it writes only
declared types in the families agentlog owns asks for this check instead.
"""

from __future__ import annotations

import difflib
from typing import Final

from agentlog.domain.errors import UnknownEventTypeError
from agentlog.domain.vocabulary import VOCABULARY, declared, family_of

CORE_FAMILIES: Final = frozenset(event_type.family for event_type in VOCABULARY)
"""Every family agentlog declares a type in (``turn``, ``user``, ``tool``, …)."""

_DECLARED_NAMES: Final = tuple(event_type.name for event_type in VOCABULARY)


def check_strict_type(event_type: str) -> None:
    """Refuse a type agentlog does not declare in a family it owns.

    Types of other families (a plugin's ``myplugin/thing``) pass. Raises
    :class:`UnknownEventTypeError`, naming the closest declared type when there is
    one.
    """
    if declared(event_type) is not None:
        return
    family = family_of(event_type)
    if family not in CORE_FAMILIES:
        return
    msg = (
        f'event type "{event_type}" is not declared, and "{family}/" is a core '
        "family (strict types refuse it instead of storing a plugin event)"
    )
    close = difflib.get_close_matches(event_type, _DECLARED_NAMES, n=1)
    if close:
        msg += f'; did you mean "{close[0]}"?'
    raise UnknownEventTypeError(msg)
