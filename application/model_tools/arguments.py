"""The five tools' arguments: one pydantic model each, the source of their schemas.

Arguments are flat and snake_case, as the original's tools had them. Times are
strings in timezone-qualified ISO 8601 (:mod:`.times`), converted to the store's
epoch milliseconds only when a filter is built. Validation is strict (a number is
not a string, ``true`` is not ``1``), unknown arguments are refused, and
:func:`parse_arguments` turns pydantic's errors into one message that names each
argument and what was wrong with it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

# Runtime import: pydantic reads the annotations when it builds the models.
from pydantic.json_schema import SkipJsonSchema  # noqa: TC002

from agentlog.application.model_tools.times import EXAMPLE, parse_time
from agentlog.application.query import DEFAULT_READ_WINDOW_MAX
from agentlog.domain.errors import ModelToolError
from agentlog.domain.visible import printable

SEQ_MAX: Final = 2**63 - 1
"""The largest seq a store can hold (a signed 64-bit integer column)."""
WINDOW_MAX: Final = DEFAULT_READ_WINDOW_MAX
LIST_MAX: Final = 1000
QUERY_MAX: Final = 10_000

Surface = Literal["current", "shadowed", "log-only"]
Availability = Literal["live", "persisted"]


def _query(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL")
    if not value.strip():
        raise ValueError("must contain non-whitespace text")
    return value


def _time(value: str) -> str:
    parse_time(value)
    return value


Query = Annotated[
    str,
    AfterValidator(_query),
    Field(
        max_length=QUERY_MAX,
        description="Literal full-text query: its words must appear together, "
        "in this order, ignoring case. No character is an operator.",
    ),
]
IsoTime = Annotated[
    str, AfterValidator(_time), Field(json_schema_extra={"format": "date-time"})
]
Seq = Annotated[int, Field(ge=0, le=SEQ_MAX)]
Ids = Annotated[list[str], Field(min_length=1, max_length=LIST_MAX)]
Names = Annotated[list[str], Field(min_length=1, max_length=LIST_MAX)]
Surfaces = Annotated[list[Surface], Field(min_length=1, max_length=3)]
Window = Annotated[int, Field(ge=0, le=WINDOW_MAX)]

TARGET = "Target session id. Omit for the current session."
SEQ = "Target event sequence number."


def _time_help(what: str, bound: str) -> str:
    return (
        f"Inclusive timezone-qualified ISO 8601 {what} {bound} bound, e.g. {EXAMPLE}."
    )


class ToolArguments(BaseModel):
    """Arguments of one tool: strict, flat, nothing unknown."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _ordered(model: BaseModel, low: str, high: str, *, times: bool = False) -> None:
    first, last = getattr(model, low), getattr(model, high)
    if first is None or last is None:
        return
    if times:
        first, last = parse_time(first), parse_time(last)
    if first > last:
        msg = f"{low} must be less than or equal to {high}"
        raise ValueError(msg)


class SessionSearchArguments(ToolArguments):
    """``session_search``: prior sessions of the caller's workspace."""

    query: Query
    session_ids: Ids | SkipJsonSchema[None] = Field(
        None, description="Optional session ids to include."
    )
    created_at_from: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("creation-time", "lower")
    )
    created_at_to: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("creation-time", "upper")
    )
    parent_session_ids: Ids | SkipJsonSchema[None] = Field(
        None, description="Optional direct parent session ids."
    )
    include_root_sessions: bool | SkipJsonSchema[None] = Field(
        None, description="Include sessions with no parent in the parent filter."
    )
    availability: (
        Annotated[list[Availability], Field(min_length=1, max_length=2)]
        | SkipJsonSchema[None]
    ) = Field(None, description="Require at least one selected source availability.")
    event_seq_from: Seq | SkipJsonSchema[None] = Field(
        None, description="Inclusive event sequence lower bound."
    )
    event_seq_to: Seq | SkipJsonSchema[None] = Field(
        None, description="Inclusive event sequence upper bound."
    )
    event_time_from: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("event-time", "lower")
    )
    event_time_to: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("event-time", "upper")
    )
    event_types: Names | SkipJsonSchema[None] = Field(
        None, description="Event types to include."
    )
    event_surfaces: Surfaces | SkipJsonSchema[None] = Field(
        None, description="Event surfaces to include."
    )

    @model_validator(mode="after")
    def _ranges(self) -> SessionSearchArguments:
        _ordered(self, "created_at_from", "created_at_to", times=True)
        _ordered(self, "event_seq_from", "event_seq_to")
        _ordered(self, "event_time_from", "event_time_to", times=True)
        return self


class EventSearchArguments(ToolArguments):
    """``session_event_search``: earlier events of one session."""

    session_id: str | SkipJsonSchema[None] = Field(None, description=TARGET)
    query: Query
    seq_from: Seq | SkipJsonSchema[None] = Field(
        None, description="Inclusive event sequence lower bound."
    )
    seq_to: Seq | SkipJsonSchema[None] = Field(
        None, description="Inclusive event sequence upper bound."
    )
    time_from: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("event-time", "lower")
    )
    time_to: IsoTime | SkipJsonSchema[None] = Field(
        None, description=_time_help("event-time", "upper")
    )
    event_types: Names | SkipJsonSchema[None] = Field(
        None, description="Event types to include."
    )
    surfaces: Surfaces | SkipJsonSchema[None] = Field(
        None, description="Event surfaces to include."
    )

    @model_validator(mode="after")
    def _ranges(self) -> EventSearchArguments:
        _ordered(self, "seq_from", "seq_to")
        _ordered(self, "time_from", "time_to", times=True)
        return self


class SessionTargetArguments(ToolArguments):
    """``session_trace``: one session, the caller's by default."""

    session_id: str | SkipJsonSchema[None] = Field(None, description=TARGET)


class EventTargetArguments(SessionTargetArguments):
    """``session_event_trace``: one event of one session."""

    seq: Seq = Field(description=SEQ)


class EventReadArguments(EventTargetArguments):
    """``session_event_read``: one event and a bounded window around it."""

    before: Window | SkipJsonSchema[None] = Field(
        None,
        description="Number of preceding raw events to summarize "
        f"(0 to {WINDOW_MAX}). Omit for none.",
    )
    after: Window | SkipJsonSchema[None] = Field(
        None,
        description="Number of following raw events to summarize "
        f"(0 to {WINDOW_MAX}). Omit for none.",
    )


# ------------------------------------------------------------------ messages


def parse_arguments(
    tool: str, model: type[ToolArguments], arguments: object
) -> ToolArguments:
    """``arguments`` validated by ``model``, or a :class:`ModelToolError` whose
    message names every wrong argument (``invalid arguments for <tool>: …``)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ModelToolError(f"invalid arguments for {tool}: expected a JSON object")
    try:
        return model.model_validate(arguments)
    except ValidationError as error:
        # An optional argument's type is "X or null": a wrong value fails both
        # branches, and the null branch's complaint says nothing useful.
        details = [d for d in error.errors() if d["type"] != "none_required"]
        problems = "; ".join(dict.fromkeys(_problem(d) for d in details))
        raise ModelToolError(f"invalid arguments for {tool}: {problems}") from None


def _where(location: tuple[int | str, ...]) -> str:
    """``event_types[2]``: the argument and the list index; the names pydantic
    gives the branches of an optional argument's type are left out."""
    if not location:
        return ""
    text = str(location[0])
    text += "".join(f"[{part}]" for part in location[1:] if isinstance(part, int))
    return printable(text, one_line=True)


_PHRASES: Final = {
    "missing": "is required",
    "extra_forbidden": "is not an argument of this tool",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
}


def _problem(detail: Any) -> str:
    kind = detail["type"]
    context = detail.get("ctx") or {}
    where = _where(tuple(detail["loc"]))
    if kind in _PHRASES:
        phrase = _PHRASES[kind]
    elif kind == "value_error":
        phrase = str(context.get("error", detail["msg"]))
    elif kind == "greater_than_equal":
        phrase = f"must be at least {context['ge']}"
    elif kind == "less_than_equal":
        phrase = f"must be at most {context['le']}"
    elif kind == "too_short":
        phrase = "must not be empty when supplied"
    elif kind == "too_long":
        phrase = f"must have at most {context['max_length']} items or characters"
    elif kind == "string_too_long":
        phrase = f"must have at most {context['max_length']} characters"
    elif kind == "literal_error":
        phrase = f"must be one of {context['expected']}"
    else:
        phrase = printable(str(detail["msg"]), one_line=True)
    return f"{where} {phrase}" if where else phrase
