"""The one pydantic base of the JSON values agentlog hands out (titles, query outputs).

Python names are snake_case and JSON keys camelCase; a model is built by either name;
a key whose value is ``None`` is left out of the JSON rather than written as ``null``
(the spec's shapes omit absent keys). Payload models, which only judge a producer's
JSON, have their own stricter base (:mod:`agentlog.domain.payloads`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.alias_generators import to_camel

if TYPE_CHECKING:
    from agentlog.domain.json import Json


class JsonModel(BaseModel):
    """camelCase JSON, built by either name, ``None`` keys omitted."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
    omit_when_none: ClassVar[frozenset[str] | None] = None
    """The fields whose key is left out when ``None``; ``None`` means every field."""

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if not isinstance(dumped, dict):
            return dumped
        names = self.omit_when_none
        if names is None:
            return {key: value for key, value in dumped.items() if value is not None}
        for name in names:
            for key in (name, to_camel(name)):
                if key in dumped and dumped[key] is None:
                    del dumped[key]
        return dumped

    def to_json(self) -> Json:
        """The JSON shape (what ``--json`` prints), as fresh plain values."""
        return self.model_dump(mode="json")


__all__ = ["JsonModel"]
