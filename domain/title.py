"""Session titles as pure functions: normalisation, fallback text, the fold.

Titles are ordinary log events (``session/title``, latest wins). Everything here
is pure so the query service, the listing projection and the title producers
share one definition of "the title" (docs/titles.md). The text rules live in
:mod:`~agentlog.domain.title_text` (no pydantic) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
)

from agentlog.domain.errors import TitleError, TitleEventError
from agentlog.domain.json_model import JsonModel
from agentlog.domain.title_text import (
    TITLE_EVENT,
    eligible_messages,
    fallback_title,
    is_eligible_message,
    message_text,
    normalize_title,
)

# ------------------------------------------------------------------ snapshots


class _FrozenModel(JsonModel):
    """A :class:`JsonModel` that is deeply immutable and strictly typed."""

    model_config = ConfigDict(frozen=True, strict=True)


class TitleModelRef(_FrozenModel):
    """The model a provider used: ``{provider, model}``."""

    provider: str
    model: str


class TitleSource(_FrozenModel):
    """``{kind:"fallback"}`` or ``{kind:"provider", provider, model?}``."""

    kind: Literal["fallback", "provider"]
    provider: str | None = None
    model: TitleModelRef | None = None


class TitleSnapshot(_FrozenModel):
    """The session's current title: its latest ``session/title`` event.

    See docs/titles.md#fold.
    """

    title: str
    message_seqs: tuple[int, ...]
    source: TitleSource
    event_seq: int
    updated_at: int | float = Field(union_mode="left_to_right")


def _malformed(event: Mapping[str, Any], reason: str) -> TitleEventError:
    return TitleEventError(
        f"session/title event at seq {event.get('seq')} is malformed: {reason}"
    )


def _rebuild_source(event: Mapping[str, Any], source: object) -> TitleSource:
    if not isinstance(source, Mapping):
        raise _malformed(event, "source must be an object")
    if source.get("kind") == "fallback":
        return TitleSource(kind="fallback")
    provider = source.get("provider")
    if not isinstance(provider, str):
        raise _malformed(event, "source.provider must be a string")
    model = source.get("model")
    if model is None:
        return TitleSource(kind="provider", provider=provider)
    if not isinstance(model, Mapping) or not all(
        isinstance(model.get(key), str) for key in ("provider", "model")
    ):
        raise _malformed(event, "source.model must be {provider, model}")
    reference = TitleModelRef(provider=model["provider"], model=model["model"])
    return TitleSource(kind="provider", provider=provider, model=reference)


def title_from_event(event: Mapping[str, Any]) -> TitleSnapshot:
    """The snapshot of one ``session/title`` event; unknown keys are dropped.

    A malformed event raises :class:`TitleEventError` (also a ``TypeError``).
    """
    data = event.get("data")
    if not isinstance(data, Mapping):
        raise _malformed(event, "data must be an object")
    title, seqs = data.get("title"), data.get("messageSeqs")
    if not isinstance(title, str):
        raise _malformed(event, "title must be a string")
    if not isinstance(seqs, list) or any(type(seq) is not int for seq in seqs):
        raise _malformed(event, "messageSeqs must be an array of integers")
    seq, time = event.get("seq"), event.get("time")
    if type(seq) is not int or not isinstance(time, int | float) or time is True:
        raise _malformed(event, "seq and time must be numbers")
    return TitleSnapshot(
        title=title,
        message_seqs=tuple(seqs),
        source=_rebuild_source(event, data.get("source")),
        event_seq=seq,
        updated_at=time,
    )


def fold_session_title(events: Sequence[Mapping[str, Any]]) -> TitleSnapshot | None:
    """The latest ``session/title`` wins (no source precedence); ``None`` if none."""
    for event in reversed(events):
        if event.get("type") == TITLE_EVENT:
            return title_from_event(event)
    return None


# -------------------------------------------------------------- the producers


@dataclass(frozen=True, slots=True)
class TitleConfig:
    """The title service's required limits; the demo uses 5/40/80.

    See docs/titles.md#producers.
    """

    fallback_max_words: int
    fallback_max_bytes: int
    max_title_bytes: int

    KEYS = ("fallbackMaxWords", "fallbackMaxBytes", "maxTitleBytes")

    def __post_init__(self) -> None:
        values = (
            self.fallback_max_words,
            self.fallback_max_bytes,
            self.max_title_bytes,
        )
        for key, value in zip(self.KEYS, values, strict=True):
            if type(value) is not int or value <= 0:
                msg = f"session-title: {key} must be a positive integer"
                raise TitleError(msg)
        if self.fallback_max_bytes > self.max_title_bytes:
            msg = "session-title: fallbackMaxBytes must not exceed maxTitleBytes"
            raise TitleError(msg)

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None) -> TitleConfig:
        """Build from the spec's camelCase keys; nothing has a default."""
        if config is None:
            msg = "session-title: configuration is required"
            raise TitleError(msg)
        return cls(*(config.get(key) for key in cls.KEYS))  # type: ignore[arg-type]


def plan_fallback_title(
    events: Sequence[Mapping[str, Any]], config: TitleConfig
) -> dict[str, Any] | None:
    """The ``session/title`` data the fallback producer would append, if any.

    Nothing when any title exists; else the fallback of the *first* eligible
    prompt, unless that comes out empty (later prompts never get a turn).
    """
    first: Mapping[str, Any] | None = None
    for event in events:
        if event.get("type") == TITLE_EVENT:
            return None
        if first is None and is_eligible_message(event):
            first = event
    if first is None:
        return None
    title = fallback_title(
        message_text(first), config.fallback_max_words, config.fallback_max_bytes
    )
    if not title:
        return None
    return {
        "title": title,
        "messageSeqs": [first["seq"]],
        "source": {"kind": "fallback"},
    }


MAX_SAFE_INTEGER = 2**53 - 1


def check_provider_result(
    provider_id: str,
    result: object,
    request_seqs: Sequence[int],
    max_title_bytes: int,
) -> dict[str, Any]:
    """The ``session/title`` data of a provider's result, or :class:`TitleError`.

    docs/titles.md#producers: the result is an object; its title a string that
    normalises non-empty under ``max_title_bytes``; ``messageSeqs`` non-empty,
    unique, strictly ordered safe integers drawn from the request; an optional
    ``model`` names a non-empty provider and model.
    """
    prefix = f'session-title provider "{provider_id}" returned '
    if not isinstance(result, Mapping):
        raise TitleError(prefix + "an invalid result")
    title = result.get("title")
    if type(title) is not str:
        raise TitleError(prefix + "an invalid result: title must be a string")
    normalised = normalize_title(title, max_title_bytes)
    if not normalised:
        raise TitleError(prefix + "an empty title")
    seqs = result.get("messageSeqs")
    if not isinstance(seqs, list) or not seqs:
        raise TitleError(prefix + "a title without at least one source message")
    allowed = set(request_seqs)
    ordered = all(
        type(seq) is int and 0 <= seq <= MAX_SAFE_INTEGER and seq in allowed
        for seq in seqs
    ) and all(a < b for a, b in pairwise(seqs))
    if not ordered:
        raise TitleError(
            prefix + "messageSeqs that are not unique, ordered seqs of the request"
        )
    source: dict[str, Any] = {"kind": "provider", "provider": provider_id}
    model = result.get("model")
    if model is not None:
        if not (
            isinstance(model, Mapping)
            and isinstance(model.get("provider"), str)
            and model["provider"]
            and isinstance(model.get("model"), str)
            and model["model"]
        ):
            raise TitleError(prefix + "an invalid model provenance")
        source["model"] = {"provider": model["provider"], "model": model["model"]}
    return {"title": normalised, "messageSeqs": list(seqs), "source": source}


__all__ = [
    "MAX_SAFE_INTEGER",
    "TITLE_EVENT",
    "TitleConfig",
    "TitleModelRef",
    "TitleSnapshot",
    "TitleSource",
    "check_provider_result",
    "eligible_messages",
    "fallback_title",
    "fold_session_title",
    "is_eligible_message",
    "message_text",
    "normalize_title",
    "plan_fallback_title",
    "title_from_event",
]
