"""The event vocabulary reference, generated from the payload models.

Two documents come out of the one registry of event types: a JSON Schema that
validates a whole log line (the envelope, and ``data`` against its type's model),
and a Markdown page with a table per type and per value type. ``docs/vocabulary.md``
and ``docs/vocabulary.schema.json`` are these outputs, committed; a test checks they
equal what this module generates, so the reference cannot drift from the code.
Regenerate them with ``python -m agentlog.infrastructure.schema_doc docs``.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import sys
import textwrap
import typing
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import Discriminator, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from agentlog.domain.payloads import OpenSet, SessionHeader
from agentlog.domain.session import SESSION_FORMAT_VERSION
from agentlog.domain.vocabulary import (
    PAYLOAD_MODELS,
    SURFACE_TYPES,
    EventType,
    declared,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from pydantic import BaseModel
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

__all__ = [
    "SCHEMA_FILE",
    "VOCABULARY_FILE",
    "vocabulary_json_schema",
    "vocabulary_markdown",
    "write_vocabulary_docs",
]

SCHEMA_FILE: Final = "vocabulary.schema.json"
VOCABULARY_FILE: Final = "vocabulary.md"
_DEFS: Final = "#/$defs/"


class _UntitledFields(GenerateJsonSchema):
    """Pydantic's generator without the auto titles (``"Callid"``) on every field,
    with each field's note (the docstring under it) as its description."""

    def field_title_should_be_set(
        self,
        schema: core_schema.CoreSchema
        | core_schema.ModelField
        | core_schema.DataclassField
        | core_schema.TypedDictField,
    ) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The notes are read here, not by pydantic at import (its
        ``use_attribute_docstrings`` made every import of the models pay for them)."""
        json_schema = super().model_schema(schema)
        properties = json_schema.get("properties", {})
        cls = schema["cls"]
        notes = _field_notes(cls)
        for name, field in cls.model_fields.items():
            key = field.alias or name
            note = notes.get(name)
            if note is not None and key in properties:
                properties[key].setdefault("description", note)
        return json_schema


def _field_notes(cls: type[BaseModel]) -> dict[str, str]:
    """Each field's note: the string right under its annotation in the class that
    declares it last (a redeclared field has only its own note)."""
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        declared = inspect.get_annotations(klass)
        if not declared:
            continue
        own = _class_notes(klass)
        for name in declared:
            notes.pop(name, None)
            if name in own:
                notes[name] = own[name]
    return notes


@cache
def _class_notes(klass: type) -> dict[str, str]:
    try:
        source = inspect.getsource(klass)
    except (OSError, TypeError):  # made at run time (OpenSet's fallbacks)
        return {}
    tree = ast.parse(textwrap.dedent(source))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    notes: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            notes[statement.target.id] = inspect.cleandoc(following.value.value)
    return notes


def _definitions() -> tuple[dict[str, JsonSchemaValue], dict[str, str]]:
    """Every model's schema by name, and the wire type -> payload model name map."""
    models: list[type[BaseModel]] = [*PAYLOAD_MODELS.values(), SessionHeader]
    refs, schema = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=_DEFS + "{model}",
        schema_generator=_UntitledFields,
    )
    payloads = {
        event_type: refs[(model, "validation")]["$ref"].removeprefix(_DEFS)
        for event_type, model in PAYLOAD_MODELS.items()
    }
    return dict(schema.get("$defs", {})), payloads


def _open_sets() -> dict[frozenset[str], str]:
    """Name each tagged union of the models' modules by the set of its variants.

    The JSON Schema of a union is anonymous (a ``oneOf`` of refs); the Markdown page
    gives it the name the code uses (``ContentBlock``, ``TurnEndReason``, …).
    """
    names: dict[frozenset[str], str] = {}
    modules = {sys.modules[model.__module__] for model in PAYLOAD_MODELS.values()}
    for module in modules:
        for name, value in vars(module).items():
            if typing.get_origin(value) is not typing.Annotated:
                continue
            if not any(
                isinstance(m, Discriminator | OpenSet) for m in value.__metadata__
            ):
                continue
            schema = TypeAdapter(value).json_schema(
                ref_template=_DEFS + "{model}", schema_generator=_UntitledFields
            )
            variants = frozenset(_ref_names(schema.get("oneOf", [])))
            if variants:
                names[variants] = name
    return names


def _ref_names(options: Sequence[JsonSchemaValue]) -> Iterator[str]:
    for option in options:
        ref = option.get("$ref")
        if isinstance(ref, str):
            yield ref.removeprefix(_DEFS)


def vocabulary_json_schema() -> dict[str, Any]:
    """A JSON Schema (2020-12) of one log line, with every payload model in ``$defs``.

    The first line of a log is its header (``SessionHeaderLine``); every other line
    is an event (``SessionEvent``). The envelope's keys are checked for every
    event; ``data`` is checked against the payload model of a declared type, and
    a surface marker is required on the surface types and refused on every other
    declared type. Lines of undeclared (plugin) types pass with any JSON
    ``data``, as the store accepts them.
    """
    definitions, payloads = _definitions()
    rules: list[JsonSchemaValue] = []
    for event_type, model_name in payloads.items():
        then: JsonSchemaValue = {"properties": {"data": {"$ref": _DEFS + model_name}}}
        if event_type in SURFACE_TYPES:
            then["required"] = ["surfaceOp"]
        else:
            then["not"] = {
                "anyOf": [
                    {"required": ["surfaceOp"]},
                    {"required": ["sourceEventSeqs"]},
                ]
            }
        rules.append(
            {"if": {"properties": {"type": {"const": event_type}}}, "then": then}
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentlog session log line",
        "description": (
            "One line of a session log: the header (the first line, type "
            '"session"), or an event. An event\'s key order is type, seq, time, '
            "data, sourceEventSeqs, surfaceOp; absent optional keys are omitted, "
            "never null."
        ),
        "type": "object",
        "if": {"required": ["type"], "properties": {"type": {"const": "session"}}},
        "then": {"$ref": _DEFS + "SessionHeaderLine"},
        "else": {"$ref": _DEFS + "SessionEvent"},
        "allOf": rules,
        "$defs": {
            **definitions,
            "SessionHeaderLine": _HEADER_SCHEMA,
            "SessionEvent": _EVENT_SCHEMA,
        },
    }


_HEADER_SCHEMA: Final[JsonSchemaValue] = {
    "description": (
        "The first line: the session's header (SessionHeader) with its type. "
        "Key order is type, version, id, createdAt, cwd, parentSession, "
        "seedLength, delegationDepth, then any other key (such as owner)."
    ),
    "allOf": [{"$ref": _DEFS + SessionHeader.__name__}],
    "required": ["type", "version", "delegationDepth"],
    "properties": {
        "type": {"const": "session"},
        "version": {"const": SESSION_FORMAT_VERSION},
    },
}
"""The header line as our writer writes it (``delegationDepth`` always)."""

_EVENT_SCHEMA: Final[JsonSchemaValue] = {
    "type": "object",
    "required": ["type", "seq", "time", "data"],
    "additionalProperties": False,
    "properties": {
        "type": {"type": "string", "description": "<family>/<name>"},
        "seq": {"type": "integer", "minimum": 0},
        "time": {"type": "integer", "description": "Unix epoch milliseconds"},
        "data": {},
        "sourceEventSeqs": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
        },
        "surfaceOp": {
            "oneOf": [
                {"const": "append"},
                {
                    "type": "object",
                    "required": ["op", "start", "end"],
                    "additionalProperties": False,
                    "properties": {
                        "op": {"const": "replace"},
                        "start": {"type": "integer", "minimum": 0},
                        "end": {"type": "integer", "minimum": 0},
                    },
                },
            ]
        },
    },
}
"""An event line's envelope (its ``data`` is checked by the type's rule)."""


# --------------------------------------------------------------------------------------
# Markdown


def _anchor(name: str) -> str:
    return name.lower()


def _link(name: str) -> str:
    return f"[`{name}`](#{_anchor(name)})"


class _Renderer:
    """Turns schema fragments into short Markdown type expressions."""

    def __init__(self, definitions: Mapping[str, JsonSchemaValue]) -> None:
        self.definitions = definitions
        self.unions = _open_sets()
        self.used_unions: dict[str, list[str]] = {}

    def type_of(self, schema: JsonSchemaValue) -> str:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _link(ref.removeprefix(_DEFS))
        if "oneOf" in schema or "anyOf" in schema:
            options: list[JsonSchemaValue] = schema.get("oneOf") or schema["anyOf"]
            variants = list(_ref_names(options))
            name = self.unions.get(frozenset(variants))
            if name is not None and len(variants) == len(options):
                self.used_unions[name] = variants
                return _link(name)
            return " or ".join(self.type_of(option) for option in options)
        if "const" in schema:
            return f'`"{schema["const"]}"`'
        if "enum" in schema:
            return " or ".join(f'`"{value}"`' for value in schema["enum"])
        kind = schema.get("type")
        if kind == "array":
            return f"array of {self.type_of(schema.get('items', {}))}"
        if kind == "integer" and "minimum" in schema:
            return f"integer ≥ {schema['minimum']}"
        if kind == "string" and "not" in schema:
            known = ", ".join(f'`"{value}"`' for value in schema["not"]["enum"])
            return f"string, none of {known}"
        if isinstance(kind, str):
            return kind
        return "any JSON"

    def table(self, schema: JsonSchemaValue) -> list[str]:
        properties: dict[str, JsonSchemaValue] = schema.get("properties", {})
        if not properties:
            return ["No fields."]
        required = set(schema.get("required", []))
        lines = ["| key | type | required | notes |", "|---|---|---|---|"]
        for key, field in properties.items():
            needed = "yes" if key in required else "no"
            note = " ".join(str(field.get("description", "")).split())
            note = note.replace("``", "`").replace("|", "\\|")
            lines.append(f"| `{key}` | {self.type_of(field)} | {needed} | {note} |")
        return lines


def _describe(schema: JsonSchemaValue) -> list[str]:
    """A model's docstring as one Markdown paragraph (reST ``code`` made Markdown)."""
    text = schema.get("description")
    if not isinstance(text, str):
        return []
    return [" ".join(text.split()).replace("``", "`"), ""]


def _in_step(step_rule: str) -> bool:
    return step_rule != "—"


def _properties(event_type: str) -> tuple[str, str, str, str]:
    """Family, owner, surface class and step rule, read from the declaration."""
    declaration = declared(event_type)
    assert isinstance(declaration, EventType)
    owner = "core" if declaration.core else "plugin"
    where = "surface" if declaration.surface_eligible else "log-only"
    step = "names the open step" if declaration.in_step else "—"
    return declaration.family, owner, where, step


_INTRO: Final = f"""# Event vocabulary

<!-- Generated from the payload models by agentlog.infrastructure.schema_doc; do not
     edit. Regenerate with: python -m agentlog.infrastructure.schema_doc docs -->

Every event in a session log is one JSON object: `type`, `seq`, `time`, `data`, and
on the five surface types a `surfaceOp` with optional `sourceEventSeqs` (see
[events.md](events.md)). This page lists the types this build gives meaning to and the
shape of their `data`. A payload is checked strictly (no coercion: `1` is not `true`,
`"1"` is not `1`), extra keys are kept, and every tagged set (content blocks, sources,
reasons, chunks, …) accepts kinds it does not know, so a newer producer's log still
loads. A type not listed here belongs to a plugin, whatever its family: it is stored
as written, log-only, with any JSON `data`. The machine-readable form is
[`{SCHEMA_FILE}`]({SCHEMA_FILE}), a JSON Schema of one log line.
The step rule marks the types that must name the open turn and step when the turn
invariants are on; the other turn rules are in
[invariants.md](invariants.md#the-checks)."""


def vocabulary_markdown() -> str:
    """The vocabulary reference page: every declared type, then the value types."""
    definitions, payloads = _definitions()
    renderer = _Renderer(definitions)
    lines = [
        _INTRO,
        "",
        "| type | family | owner | surface | step rule |",
        "|---|---|---|---|---|",
    ]
    for event_type in payloads:
        family, owner, where, step = _properties(event_type)
        anchor = _anchor(event_type.replace("/", ""))
        lines.append(
            f"| [`{event_type}`](#{anchor}) | `{family}` | {owner} | {where} | {step} |"
        )
    lines += ["", "## Event types", ""]
    for event_type, model_name in payloads.items():
        family, owner, where, step = _properties(event_type)
        schema = definitions[model_name]
        lines += [f"### `{event_type}`", ""]
        rule = ", must name the open turn and step" if _in_step(step) else ""
        lines += [f"Family `{family}`, {owner}, {where}{rule}.", ""]
        lines += _describe(schema)
        lines += [*renderer.table(schema), ""]
    # Render every value type once so the renderer learns which unions are used.
    value_types = [
        name for name in sorted(definitions) if name not in payloads.values()
    ]
    tables = {name: renderer.table(definitions[name]) for name in value_types}
    in_union = {v for variants in renderer.used_unions.values() for v in variants}
    lines += ["## Tagged sets", ""]
    lines += [
        "Each set is told apart by one key (`type` or `kind`). A known kind must match",
        "its own shape; any other string is accepted as an unknown kind and kept.",
        "",
    ]
    for union in sorted(renderer.used_unions):
        variants = renderer.used_unions[union]
        listed = ", ".join(_link(variant) for variant in variants)
        lines += [f"### `{union}`", "", f"One of {listed}.", ""]
        for variant in variants:
            lines += [f"#### `{variant}`", ""]
            lines += _describe(definitions[variant])
            lines += [*tables[variant], ""]
    lines += ["## Other value types", ""]
    for name in value_types:
        if name in in_union:
            continue
        lines += [f"### `{name}`", ""]
        lines += _describe(definitions[name])
        if name == SessionHeader.__name__:
            lines += [
                "Kept beside the log, never an event. An exported log's first line is "
                f'this object with `"type": "session"`; `version` is '
                f"{SESSION_FORMAT_VERSION}.",
                "",
            ]
        lines += [*tables[name], ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _schema_text() -> str:
    return json.dumps(vocabulary_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_vocabulary_docs(directory: Path) -> list[Path]:
    """Write the Markdown page and the JSON Schema into ``directory``."""
    written = []
    for name, text in (
        (VOCABULARY_FILE, vocabulary_markdown()),
        (SCHEMA_FILE, _schema_text()),
    ):
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentlog.infrastructure.schema_doc DIRECTORY``."""
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m agentlog.infrastructure.schema_doc DIR\n")
        return 2
    for path in write_vocabulary_docs(Path(args[0])):
        sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
