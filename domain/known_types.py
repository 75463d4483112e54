"""Which event types this build must know, and the refusal of the ones it does not.

The type map is open (docs/events.md#envelope): a plugin adds types in a family of its
own (``"<family>/<name>"``) and such a type is stored as a log-only event. The families
below belong to the session core and its first-party plugins: a type there that no
payload model is registered for (``agentlog.domain.vocabulary.PAYLOAD_MODELS``) was
written by a newer build, whose rules this one would apply wrongly — so it is refused,
like a header of another format version. ``session`` and ``session-snapshot`` are the
stored topics of the header and of snapshots; an event of either type would be read back
as one of those, so they are refused even if someone registers them.

Call :func:`check_known_type` *after* ``check_legacy``: ``request/header-delta`` is
an unknown type of the core ``request`` family, and its legacy message must win.
"""

from __future__ import annotations

from typing import Final

from agentlog.domain.errors import UnsupportedSessionFormatError
from agentlog.domain.vocabulary import (
    PAYLOAD_MODELS,
    RESERVED_TYPES,
    VOCABULARY,
    family_of,
)

_OPEN_FAMILIES: Final = frozenset({"session", "request"})

CORE_FAMILIES: Final = frozenset(t.family for t in VOCABULARY) - _OPEN_FAMILIES
"""Families owned by the seed-era session core and its first-party plugins (closed
sets). ``session/`` and ``request/`` are open: later harnesses add
``session/end-seed`` and ``request/context`` as plain log-only types."""

event_family = family_of


def is_known_type(event_type: str) -> bool:
    """Tell whether this build may record and read events of ``event_type``.

    Registered types are known; so is any type of a family outside
    :data:`CORE_FAMILIES` (a plugin's own, stored as a log-only event). Reserved
    topics never are.
    """
    if event_type in RESERVED_TYPES:
        return False
    if event_type in PAYLOAD_MODELS:
        return True
    return event_family(event_type) not in CORE_FAMILIES


def check_known_type(session_id: str, event_type: str, seq: int) -> None:
    """Refuse a type of a core family that no payload model is registered for.

    Raises :class:`~agentlog.domain.errors.UnsupportedSessionFormatError` with
    ``session "<id>" contains unknown event type "<type>" at seq <seq>; …``, on
    append, seeding, import and load alike.
    """
    if is_known_type(event_type):
        return
    if event_type in RESERVED_TYPES:
        why = "that name is reserved for the stored header and snapshots"
    else:
        family = event_family(event_type)
        why = (
            f'"{family}/" types belong to the session core and this build does not '
            "know this one (a newer build wrote it, or its payload model is not "
            "registered)"
        )
    msg = (
        f'session "{session_id}" contains unknown event type "{event_type}" at seq '
        f"{seq}; {why}"
    )
    raise UnsupportedSessionFormatError(msg)


__all__ = [
    "CORE_FAMILIES",
    "RESERVED_TYPES",
    "check_known_type",
    "event_family",
    "is_known_type",
]
