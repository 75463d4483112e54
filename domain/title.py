"""Session titles as pure functions: normalisation, fallback text, the fold.

Titles are ordinary log events (``session/title``, latest wins). Everything here
is pure so the query service, the listing projection and the title producers
share one definition of "the title" (docs/titles.md).
"""

from __future__ import annotations

import math
import re
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

TITLE_EVENT = "session/title"
USER_MESSAGE = "user/message"

# Normalisation step 1, applied in this order. ``\Z`` (not ``$``) is "end of text".
_OSC = re.compile(r"(?:\x1b\]|\x9d)[\s\S]*?(?:\x07|\x1b\\|\Z)")
_CSI = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]")
_ESC_PAIR = re.compile(r"\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile(
    r"[\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)
# After the controls are gone, Python's ``\s`` is JavaScript's ``\s``.
_WHITESPACE = re.compile(r"\s+")


def _clean(text: str) -> str:
    """Steps 1–2: strip terminal sequences and invisibles, collapse whitespace."""
    for pattern in (_OSC, _CSI, _ESC_PAIR, _CONTROLS, _INVISIBLE):
        text = pattern.sub("", text)
    return _WHITESPACE.sub(" ", text).strip(" ")


def _truncate(text: str, max_bytes: float) -> str:
    """Steps 3–4: cut to ``max_bytes`` UTF-8 bytes on a code-point boundary."""
    if math.isinf(max_bytes):
        return text.rstrip(" ")
    # A lone surrogate counts 3 bytes, as the U+FFFD a TextEncoder writes for it.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        end = int(max_bytes)
        while end > 0 and data[end] & 0xC0 == 0x80:
            end -= 1
        text = data[:end].decode("utf-8", "surrogatepass")
    return text.rstrip(" ")


def _check_limit(value: object, name: str) -> None:
    if type(value) is not int or value <= 0:
        msg = f"{name} must be a positive integer"
        raise TitleError(msg)


def normalize_title(text: str, max_bytes: float) -> str:
    """A display-safe title of at most ``max_bytes`` UTF-8 bytes.

    See docs/titles.md#normalisation.

    ``max_bytes`` is a positive int, or ``math.inf`` for the eligibility test.
    """
    if not (isinstance(max_bytes, float) and math.isinf(max_bytes) and max_bytes > 0):
        _check_limit(max_bytes, "maxBytes")
    return _truncate(_clean(text), max_bytes)


def fallback_title(text: str, max_words: int, max_bytes: int) -> str:
    """The first ``max_words`` words of a prompt, cleaned and byte-capped.

    See docs/titles.md#normalisation.
    """
    _check_limit(max_bytes, "maxBytes")
    _check_limit(max_words, "maxWords")
    words = _clean(text).split(" ")[:max_words]
    return _truncate(" ".join(words), max_bytes)


def message_text(event: Mapping[str, Any]) -> str:
    """The ``text`` blocks of a message event joined with newlines."""
    data = event.get("data")
    content = data.get("content") if isinstance(data, Mapping) else None
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def is_eligible_message(event: Mapping[str, Any]) -> bool:
    """A human prompt with visible text: what a title may be derived from.

    See docs/titles.md#normalisation.
    """
    if event.get("type") != USER_MESSAGE:
        return False
    data = event.get("data")
    source = data.get("source") if isinstance(data, Mapping) else None
    if not isinstance(source, Mapping) or source.get("kind") != "user":
        return False
    return bool(normalize_title(message_text(event), math.inf))


def eligible_messages(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Every eligible prompt in log order (the ``all-user-messages`` input)."""
    return [event for event in events if is_eligible_message(event)]


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
