"""Lossless JSON: the rule for what a session stores, and a codec that keeps it exact.

Every payload passes :func:`snapshot_json` on append (validate and detach in one pass)
and :func:`dumps` / :func:`loads` on its way to and from storage. The fast paths are
plain recursion and ``orjson``; the exact paths exist because the rule
(docs/events.md#lossless-json) admits what those cannot carry: nesting 20,000 deep,
integers beyond 64 bits (or beyond Python's 4,300-digit ``str`` limit) and lone
surrogates.
"""

from __future__ import annotations

import json as _json
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "Envelope",
    "Json",
    "NotJsonError",
    "copy_json",
    "dumps",
    "is_json_value",
    "js_number",
    "loads",
    "snapshot_json",
]

Json: TypeAlias = Any
"""A lossless JSON value; ``Any`` because JSON is recursive.

See docs/events.md#lossless-json.
"""

Envelope: TypeAlias = dict[str, Any]
"""One session event as plain JSON (docs/events.md#envelope).

``{type, seq, time, data, sourceEventSeqs?, surfaceOp?}``
"""


class NotJsonError(ValueError):
    """A value breaks the lossless-JSON rule; callers turn it into the spec's text."""


# Recursion depth the fast paths may use before handing over to an iterative walk.
# It leaves most of Python's default limit of 1,000 frames to the caller's stack.
_FAST_DEPTH: Final = 200

# Marks text written by the exact encoder, so that ``loads`` decodes it exactly
# (``orjson.loads`` turns integers beyond 64 bits into floats). JSON allows leading
# whitespace, so the text stays valid JSON for every other reader.
_EXACT_MARK: Final = b" "


class _TooDeep(Exception):  # noqa: N818 - internal control flow, never escapes
    """The fast recursive path went deeper than ``_FAST_DEPTH``."""


# --------------------------------------------------------------------------------------
# Validation and copying


def is_json_value(value: object) -> bool:
    """Tell whether ``value`` satisfies the lossless-JSON rule.

    See docs/events.md#lossless-json.
    """
    try:
        snapshot_json(value)
    except NotJsonError:
        return False
    return True


def snapshot_json(value: object) -> Json:
    """Validate ``value`` as lossless JSON and return a detached deep copy of it.

    Exact types only (no subclasses), finite floats, ``str`` keys; cycles are refused
    and shared aliases are copied twice. Raises :class:`NotJsonError`.
    """
    try:
        return _snapshot_fast(value, 0)
    except (_TooDeep, RecursionError):
        # Deep, or cyclic (a cycle is infinitely deep): the iterative walk tells which.
        return _snapshot_deep(value)


def copy_json(value: Json) -> Json:
    """Deep-copy JSON that is already valid, for handing stored data to a caller.

    It is the walk of :func:`snapshot_json`: an unchecked copier measured no faster
    (the checks are a set lookup per value), so one walk serves both.
    """
    return snapshot_json(value)


_SCALAR_TYPES: Final = frozenset({str, int, bool, type(None)})


def _snapshot_fast(value: object, depth: int) -> Json:
    cls = type(value)
    if cls is dict:
        if depth > _FAST_DEPTH:
            raise _TooDeep
        depth += 1
        copy: dict[str, Json] = value.copy()  # type: ignore[attr-defined]
        for key, item in copy.items():
            if type(key) is not str:
                raise NotJsonError(_bad_key(key))
            if type(item) not in _SCALAR_TYPES:
                copy[key] = _snapshot_fast(item, depth)  # same size: iteration is safe
        return copy
    if cls is list:
        if depth > _FAST_DEPTH:
            raise _TooDeep
        depth += 1
        items: list[Json] = []
        append = items.append
        for item in value:  # type: ignore[attr-defined]
            append(item if type(item) in _SCALAR_TYPES else _snapshot_fast(item, depth))
        return items
    if cls in _SCALAR_TYPES:
        return value
    if cls is float and value - value == 0.0:  # type: ignore[operator]
        return value  # finite: inf - inf and nan - nan are nan
    raise NotJsonError(_bad_value(value))


def _snapshot_deep(value: object) -> Json:
    """Iterative twin of the fast path: no recursion, cycles detected by ancestry."""
    copy = _copy_node(value)
    if copy is value:
        return copy  # a scalar
    ancestors = {id(value)}
    # Each frame: the source container's id, the copy being filled, and an iterator
    # over (key, item) pairs (keys are None for lists).
    stack: list[tuple[int, Any, Iterator[tuple[Any, object]]]] = [
        (id(value), copy, _entries(value))
    ]
    while stack:
        source_id, target, entries = stack[-1]
        for key, item in entries:
            if key is not None and type(key) is not str:
                raise NotJsonError(_bad_key(key))
            item_copy = _copy_node(item)
            if key is None:
                target.append(item_copy)
            else:
                target[key] = item_copy
            if item_copy is not item:  # a container: descend into it
                if id(item) in ancestors:
                    msg = "a container contains itself"
                    raise NotJsonError(msg)
                ancestors.add(id(item))
                stack.append((id(item), item_copy, _entries(item)))
                break
        else:
            stack.pop()
            ancestors.discard(source_id)
    return copy


def _copy_node(value: object) -> Json:
    """A new empty container of the same kind, or the (checked) scalar itself."""
    cls = type(value)
    if cls is dict:
        return {}
    if cls is list:
        return []
    if cls in _SCALAR_TYPES:
        return value
    if cls is float and value - value == 0.0:  # type: ignore[operator]
        return value
    raise NotJsonError(_bad_value(value))


def _entries(container: Any) -> Iterator[tuple[Any, object]]:
    if type(container) is dict:
        return iter(container.items())
    return ((None, item) for item in container)


# Messages name types, never values: a repr may be huge, slow or raise.


def _bad_key(key: object) -> str:
    return f"an object key of type {_type_name(key)} is not a str"


def _bad_value(value: object) -> str:
    if type(value) is float:
        return "a float that is not finite is not JSON"
    return f"a value of type {_type_name(value)} is not JSON"


def _type_name(value: object) -> str:
    cls = type(value)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# --------------------------------------------------------------------------------------
# Encoding

_STDLIB_ENCODER: Final = _json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":")
)
_encode_string: Final = _json.encoder.encode_basestring
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def dumps(value: Json) -> bytes:
    """Encode valid JSON as compact UTF-8 text, key order kept.

    ``orjson`` writes the common case. What it refuses (integers beyond 64 bits,
    nesting past ~254 levels, lone surrogates) is written by the standard library,
    or by an iterative encoder giving the same text, and marked with one leading
    space so that :func:`loads` decodes it exactly. Lone surrogates are escaped as
    ``\\udxxx``, as JavaScript's ``JSON.stringify`` does.
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        pass
    try:
        text = _STDLIB_ENCODER.encode(value)
    except (RecursionError, ValueError):
        # Too deep for the C encoder, or an int past the str-conversion digit limit.
        text = _encode_iteratively(value)
    try:
        return _EXACT_MARK + text.encode()
    except UnicodeEncodeError:
        escaped = _SURROGATE.sub(lambda match: f"\\u{ord(match[0]):04x}", text)
        return _EXACT_MARK + escaped.encode()


def _encode_iteratively(value: Json) -> str:
    """Write the same text as the stdlib encoder, without recursion."""
    parts: list[str] = []
    # Each frame: the container, whether it is a dict, and an iterator of its entries.
    stack: list[tuple[Any, bool, Iterator[Any]]] = []
    ancestors: set[int] = set()
    item = value
    while True:
        cls = type(item)
        if (cls is dict or cls is list) and item:
            if id(item) in ancestors:
                msg = "Circular reference detected"
                raise ValueError(msg)
            ancestors.add(id(item))
            is_dict = cls is dict
            parts.append("{" if is_dict else "[")
            stack.append((item, is_dict, iter(item.items() if is_dict else item)))
        else:
            parts.append(_encode_scalar(item))
        # Find the next item to write, closing finished containers.
        while stack:
            container, is_dict, entries = stack[-1]
            for entry in entries:
                if parts[-1] != "{" and parts[-1] != "[":
                    parts.append(",")
                if is_dict:
                    key, item = entry
                    parts.append(_encode_string(key) + ":")
                else:
                    item = entry
                break
            else:
                parts.append("}" if is_dict else "]")
                ancestors.discard(id(container))
                stack.pop()
                continue
            break
        else:
            return "".join(parts)


def _encode_scalar(value: Json) -> str:
    cls = type(value)
    if cls is str:
        return _encode_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if cls is int:
        return _int_text(value)
    if cls is float:
        if value - value == 0.0:
            return float.__repr__(value)
        msg = f"Out of range float values are not JSON compliant: {value!r}"
        raise ValueError(msg)
    if cls is dict:
        return "{}"
    if cls is list:
        return "[]"
    msg = f"Object of type {cls.__name__} is not JSON serializable"
    raise TypeError(msg)


def _int_text(value: int) -> str:
    try:
        return int.__repr__(value)
    except ValueError:
        # Past ``sys.get_int_max_str_digits()``; ``Decimal`` converts without a limit.
        return str(Decimal(value))


# --------------------------------------------------------------------------------------
# Decoding

# A backslash escape inside a JSON string; group 1 is set for a surrogate code unit.
_ESCAPE: Final = re.compile(r"\\(?:u([dD][89a-fA-F][0-9a-fA-F]{2})|.)", re.DOTALL)
_SURROGATE_ESCAPE_HINT: Final = re.compile(r"\\u[dD][89a-fA-F]")
_NUMBER: Final = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_LITERALS: Final = {"true": True, "false": False, "null": None}
# The C string scanner (typeshed does not declare it): (text, end, strict) -> (str, end)
_scanstring: Final[Callable[[str, int, bool], tuple[str, int]]] = (
    _json.decoder.scanstring  # type: ignore[attr-defined]
)


def _reject_constant(name: str) -> Json:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def _parse_int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:
        return int(Decimal(digits))  # past the str-conversion digit limit


_STDLIB_DECODER: Final = _json.JSONDecoder(parse_constant=_reject_constant)
_BIG_INT_DECODER: Final = _json.JSONDecoder(
    parse_constant=_reject_constant, parse_int=_parse_int
)


def loads(data: bytes | str) -> Json:
    """Decode JSON text; exactly (stdlib, then iteratively) when it starts with a space.

    Text ``orjson`` refuses (nesting past its limit, escaped lone surrogates) is
    retried with the standard library, which raises its own error if the text is not
    JSON. Raises ``ValueError`` on invalid text.
    """
    if isinstance(data, str):
        marked = data.startswith(" ")
    else:
        marked = data.startswith(_EXACT_MARK)
    if not marked:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    text = data if isinstance(data, str) else data.decode()
    if marked and "\\" in text:
        text = _split_surrogate_escapes(text)
    return _loads_exact(text)


def _loads_exact(text: str) -> Json:
    try:
        return _STDLIB_DECODER.decode(text)
    except RecursionError:
        return _decode_iteratively(text)
    except ValueError as error:
        if isinstance(error, _json.JSONDecodeError):
            raise
        # An integer past the str-conversion digit limit: decode with a parser
        # that converts through Decimal.
        try:
            return _BIG_INT_DECODER.decode(text)
        except RecursionError:
            return _decode_iteratively(text)


def _split_surrogate_escapes(text: str) -> str:
    r"""Turn ``\udxxx`` escapes into the code points themselves, in our own text.

    Standard decoders join an escaped high+low pair into one astral character, as
    JavaScript does. Our encoder writes astral characters raw and escapes only
    surrogate code points, so in marked text such a pair means two code points.
    """
    if _SURROGATE_ESCAPE_HINT.search(text) is None:
        return text
    return _ESCAPE.sub(
        lambda match: chr(int(match[1], 16)) if match[1] else match[0], text
    )


def _decode_iteratively(text: str) -> Json:
    """Decode like the stdlib decoder without recursion (for very deep text)."""
    stack: list[tuple[Any, str | None]] = []  # (container, pending key of a dict)
    index = _skip(text, 0)
    value: Json
    key: str | None
    try:
        while True:
            char = text[index]
            if char == "{":
                index = _skip(text, index + 1)
                if text[index] == "}":
                    value, index = {}, index + 1
                else:
                    key, index = _decode_key(text, index)
                    stack.append(({}, key))
                    continue
            elif char == "[":
                index = _skip(text, index + 1)
                if text[index] == "]":
                    value, index = [], index + 1
                else:
                    stack.append(([], None))
                    continue
            elif char == '"':
                value, index = _scanstring(text, index + 1, True)
            elif (number := _NUMBER.match(text, index)) is not None:
                integer, fraction, exponent = number.groups()
                if fraction or exponent:
                    value = float(integer + (fraction or "") + (exponent or ""))
                else:
                    value = _parse_int(integer)
                index = number.end()
            else:
                for word, constant in _LITERALS.items():
                    if text.startswith(word, index):
                        value, index = constant, index + len(word)
                        break
                else:
                    raise _json.JSONDecodeError("Expecting value", text, index)
            # Attach the value to its parent; close every container that ends here.
            while True:
                if not stack:
                    index = _skip(text, index)
                    if index != len(text):
                        raise _json.JSONDecodeError("Extra data", text, index)
                    return value
                container, key = stack[-1]
                if key is None:
                    container.append(value)
                else:
                    container[key] = value
                index = _skip(text, index)
                char = text[index]
                if char == ",":
                    index = _skip(text, index + 1)
                    if key is not None:
                        key, index = _decode_key(text, index)
                        stack[-1] = (container, key)
                    break
                if char != ("]" if key is None else "}"):
                    msg = "Expecting ',' delimiter"
                    raise _json.JSONDecodeError(msg, text, index)
                stack.pop()
                value, index = container, index + 1
    except IndexError:
        raise _json.JSONDecodeError("Expecting value", text, len(text)) from None


def _decode_key(text: str, index: int) -> tuple[str, int]:
    """Read ``"key" :`` at ``index`` and return the key and the index of its value."""
    if text[index] != '"':
        msg = "Expecting property name enclosed in double quotes"
        raise _json.JSONDecodeError(msg, text, index)
    key, index = _scanstring(text, index + 1, True)
    index = _skip(text, index)
    if text[index] != ":":
        raise _json.JSONDecodeError("Expecting ':' delimiter", text, index)
    return key, _skip(text, index + 1)


def _skip(text: str, index: int) -> int:
    """The index of the first non-whitespace character at or after ``index``."""
    match = _WHITESPACE.match(text, index)
    return index if match is None else match.end()


# --------------------------------------------------------------------------------------
# Messages


def js_number(value: object) -> str:
    """Render a value as JavaScript's ``${value}`` would, for the spec's messages.

    Integral numbers lose their ``.0``, ``None`` is ``null``, non-finite floats are
    ``NaN`` / ``Infinity`` / ``-Infinity``, exponents follow ``Number#toString``;
    strings are themselves, lists join like ``Array#toString``, dicts are
    ``[object Object]``.
    """
    if type(value) is list:
        return _js_array(value)
    if type(value) is dict:
        return "[object Object]"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return _int_text(value)
    if type(value) is float:
        return _js_float(value)
    return str(value)


def _js_array(array: list[Any]) -> str:
    """``Array#toString``: items joined by commas, nested lists alike, null as empty.

    Iterative; a list met again inside itself renders empty, as in JavaScript.
    """
    parts: list[str] = []
    stack: list[tuple[int, Iterator[Any]]] = [(id(array), iter(array))]
    ancestors = {id(array)}
    first = True
    while stack:
        for item in stack[-1][1]:
            if not first:
                parts.append(",")
            first = False
            if type(item) is list:
                if id(item) not in ancestors:
                    ancestors.add(id(item))
                    stack.append((id(item), iter(item)))
                    first = True
                    break
            elif item is not None:
                parts.append(js_number(item))
        else:
            ancestors.discard(stack.pop()[0])
            first = False
    return "".join(parts)


def _js_float(value: float) -> str:
    if value != value:  # NaN
        return "NaN"
    if value - value != 0.0:
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "0"  # JavaScript prints -0 as 0
    sign = "-" if value < 0 else ""
    # repr() gives the shortest round-tripping digits, as JavaScript does.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent = int(exponent) + len(digit_tuple) - len(digits)
    # ECMA-262 Number::toString, with k digits and decimal exponent n.
    k = len(digits)
    n = k + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if n > 0 else '-'}{abs(n - 1)}"
    return sign + text
