"""Lossless JSON (docs/events.md#lossless-json, scenarios 3–10) and the exact codec, per function."""

from __future__ import annotations

import datetime
import json
import math
import sys
import uuid
from collections import Counter, OrderedDict, defaultdict
from decimal import Decimal
from enum import IntEnum, StrEnum
from fractions import Fraction
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentlog.domain.json import (
    NotJsonError,
    copy_json,
    dumps,
    is_json_value,
    js_number,
    loads,
    snapshot_json,
)
from agentlog.domain.json import _decode_iteratively as decode_iteratively
from agentlog.domain.json import _encode_iteratively as encode_iteratively

DEEP = 20_000


class Color(StrEnum):
    RED = "red"


class Level(IntEnum):
    ONE = 1


class Point(BaseModel):
    x: int


class Text(str):
    __slots__ = ()


def param_id(value: Any) -> str:
    """A short test id (``repr`` of a 5,000-digit integer raises)."""
    try:
        text = repr(value)
    except ValueError:
        return f"int-of-{len(str(Decimal(value)))}-digits"
    if " at 0x" in text or isinstance(value, uuid.UUID) or "datetime" in text:
        # Addresses and fresh values differ per process: pytest-xdist needs
        # the same ids on every worker.
        return type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def deep_list(depth: int, leaf: Any = None) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    node.append(leaf)
    return root


def deep_dict(depth: int, leaf: Any = None) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        node["k"] = child
        node = child
    node["leaf"] = leaf
    return root


def deep_mixed(depth: int, leaf: Any = None) -> dict[str, Any]:
    """Alternating dicts and lists, ``depth`` containers in all."""
    root: dict[str, Any] = {}
    node: Any = root
    for level in range(depth - 1):
        child: Any = [] if level % 2 == 0 else {}
        if type(node) is dict:
            node["k"] = child
        else:
            node.append(child)
        node = child
    if type(node) is dict:
        node["leaf"] = leaf
    else:
        node.append(leaf)
    return root


def innermost(value: Any) -> Any:
    """The deepest container of a single-path nesting."""
    node = value
    while True:
        items = node.values() if type(node) is dict else node
        child = next((item for item in items if type(item) in (list, dict)), None)
        if child is None:
            return node
        node = child


def same(left: Any, right: Any) -> bool:
    """Exact equality: types, float signs and key order too; iterative."""
    pending = [(left, right)]
    while pending:
        a, b = pending.pop()
        if type(a) is not type(b):
            return False
        if type(a) is float:
            if a != b or math.copysign(1.0, a) != math.copysign(1.0, b):
                return False
        elif type(a) is list:
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif type(a) is dict:
            if list(a) != list(b):
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif a != b:
            return False
    return True


def shares_containers(left: Any, right: Any) -> bool:
    """Whether any list or dict object appears in both trees (a copy must share none)."""

    def containers(value: Any) -> set[int]:
        found: set[int] = set()
        pending = [value]
        while pending:
            node = pending.pop()
            if type(node) is list:
                found.add(id(node))
                pending.extend(node)
            elif type(node) is dict:
                found.add(id(node))
                pending.extend(node.values())
        return found

    return bool(containers(left) & containers(right))


def js_quote(text: str) -> str:
    """ECMA-262 QuoteJSONString (well-formed JSON.stringify) for a Python str."""
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n"}
    short |= {"\r": "\\r", "\t": "\\t"}
    parts = ['"']
    for char in text:
        code = ord(char)
        if char in short:
            parts.append(short[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            parts.append(f"\\u{code:04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


# --------------------------------------------------------------------------------------
# Scenarios 3–10 at the function level


def check_rejected(value: Any) -> None:
    assert not is_json_value(value)
    with pytest.raises(NotJsonError):
        snapshot_json(value)


def test_core_003_callable_in_data_is_rejected() -> None:
    data = {"content": [{"type": "text", "text": "hi"}], "extra": lambda: 1}
    check_rejected(data)
    check_rejected(print)


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        set(),
        {1, 2},
        frozenset(),
        b"x",
        bytearray(b"x"),
        memoryview(b"x"),
        datetime.datetime.now(tz=datetime.UTC),
        datetime.date(2026, 1, 1),
        Decimal(1),
        Fraction(1, 2),
        1j,
        (1, 2),
        (),
        object(),
        uuid.uuid4(),
        sys,
        int,
        Point(x=1),
        range(3),
        iter([]),
        Ellipsis,
    ],
    ids=param_id,
)
def test_core_004_non_json_values_are_rejected(value: Any) -> None:
    check_rejected(value)
    check_rejected({"content": [], "extra": value})
    check_rejected([1, {"a": [value]}])


@pytest.mark.parametrize("key", [1, 1.5, None, True, (1, 2), b"k", Color.RED])
def test_core_005_a_non_str_key_anywhere_is_rejected(key: Any) -> None:
    check_rejected({key: "a"})
    check_rejected({"a": [1, {"b": {key: "a"}}]})


def test_core_006_a_callable_nested_at_depth_3_is_rejected() -> None:
    check_rejected({"a": [{"b": len}]})
    check_rejected({"a": [[lambda: None]]})


def test_core_007_containers_that_contain_themselves_are_rejected() -> None:
    looped_dict: dict[str, Any] = {"a": 1}
    looped_dict["self"] = looped_dict
    looped_list: list[Any] = [1]
    looped_list.append(looped_list)
    indirect: dict[str, Any] = {"x": [{"y": []}]}
    indirect["x"][0]["y"].append(indirect)
    for value in (looped_dict, looped_list, indirect, {"wrap": [looped_list]}):
        check_rejected(value)


def test_core_008_a_shared_alias_is_accepted_and_copied_twice() -> None:
    shared = {"a": [1, 2], "b": None}
    data = {"first": shared, "second": [shared, shared]}
    assert is_json_value(data)
    copy = snapshot_json(data)
    assert copy == data
    assert copy["first"] == copy["second"][0] == copy["second"][1] == shared
    assert copy["first"] is not copy["second"][0]
    assert not shares_containers(copy, data)


def test_core_009_nested_values_and_numbers_are_accepted() -> None:
    data = {
        "content": [{"type": "text", "text": "hi"}],
        "extra": [1, 2, [3, {"a": None, "b": True}]],
        "numbers": [
            -0.0,
            1.5,
            2**70,
            -(2**70),
            10**5000,
            5e-324,
            1.7976931348623157e308,
        ],
        "empty": [{}, [], ""],
    }
    assert is_json_value(data)
    copy = snapshot_json(data)
    assert same(copy, data)
    assert math.copysign(1.0, copy["numbers"][0]) == -1.0


@pytest.mark.parametrize(
    "value",
    [
        OrderedDict(a=1),
        defaultdict(list),
        Counter("ab"),
        Color.RED,
        Level.ONE,
        Text("x"),
    ],
    ids=param_id,
)
def test_core_010_subclasses_of_json_types_are_rejected(value: Any) -> None:
    check_rejected(value)
    check_rejected({"content": [], "extra": [value]})


def test_core_011_snapshot_is_detached_from_the_caller() -> None:
    data: dict[str, Any] = {
        "content": [{"type": "text", "text": "hi"}],
        "todos": [{"content": "x"}],
    }
    copy = snapshot_json(data)
    data["content"][0]["text"] = "changed"
    data["content"].append({"type": "text", "text": "more"})
    data["todos"][0]["status"] = "done"
    data["new"] = 1
    assert copy == {
        "content": [{"type": "text", "text": "hi"}],
        "todos": [{"content": "x"}],
    }


# --------------------------------------------------------------------------------------
# Scalars the rule accepts, including the edges


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -1,
        2**63,
        2**64,
        -(2**70),
        10**5000,
        0.0,
        -0.0,
        1e-300,
        "",
        "é😀",
        "\ud800",
        "a\udc00b",
        "\ud83d\ude00",
        "\x00\x1f\x7f\u2028",
    ],
    ids=param_id,
)
def test_scalars_of_every_json_kind_are_accepted(value: Any) -> None:
    assert is_json_value(value)
    assert same(snapshot_json(value), value)
    assert same(copy_json(value), value)


def test_copy_json_is_a_detached_deep_copy() -> None:
    data = {"a": [{"b": [1, 2.5, None]}], "c": "x"}
    copy = copy_json(data)
    assert same(copy, data)
    assert not shares_containers(copy, data)


# --------------------------------------------------------------------------------------
# 20,000-deep nesting through every function


@pytest.mark.parametrize("build", [deep_list, deep_dict, deep_mixed])
@pytest.mark.parametrize(
    "leaf", [None, 2**70, -0.0, "\ud800", "plain"], ids=lambda leaf: param_id(leaf)
)
def test_deep_nesting_passes_through_every_function(build: Any, leaf: Any) -> None:
    value = build(DEEP, leaf)
    assert is_json_value(value)
    copy = snapshot_json(value)
    assert same(copy, value)
    assert not shares_containers(copy, value)
    assert same(copy_json(value), value)
    text = dumps(value)
    assert text.startswith(b" ")
    assert not text.startswith(b"  ")
    assert same(loads(text), value)
    assert same(loads(text.decode()), value)
    assert same(loads(text[1:]), value)  # orjson refuses the depth; retried exactly


def test_every_fallback_writes_the_same_text() -> None:
    # 300 levels: past orjson's limit, within the stdlib encoder's.
    shallow = deep_mixed(300, [2**64, "x"])
    assert dumps(shallow) == b" " + encode_iteratively(shallow).encode()
    assert (
        dumps(shallow)
        == b" "
        + json.dumps(shallow, ensure_ascii=False, separators=(",", ":")).encode()
    )
    # 20,000 levels: past the stdlib encoder's limit too.
    value = deep_mixed(DEEP, [1, "x"])
    text = dumps(value)
    assert text == b" " + encode_iteratively(value).encode()
    assert text.startswith(b' {"k":[{"k":[')
    assert text.endswith(b'[1,"x"]' + b"]}" * (DEEP // 2 - 1) + b"]}")


@pytest.mark.parametrize("build", [deep_list, deep_dict, deep_mixed])
def test_deep_invalid_leaf_and_deep_cycle_are_rejected(build: Any) -> None:
    check_rejected(build(DEEP, math.nan))
    check_rejected(build(DEEP, {1: "a"}))
    looped = build(DEEP)
    node = innermost(looped)
    if type(node) is dict:
        node["back"] = looped
    else:
        node.append(looped)
    check_rejected(looped)


def test_deep_shared_alias_is_accepted() -> None:
    shared = deep_list(DEEP, 1)
    value = {"a": shared, "b": shared}
    assert is_json_value(value)
    copy = snapshot_json(value)
    assert same(copy["a"], copy["b"])
    assert copy["a"] is not copy["b"]


def test_js_number_renders_a_deep_list_without_recursion() -> None:
    assert js_number(deep_list(DEEP, 7)) == "7"


# --------------------------------------------------------------------------------------
# dumps / loads


def test_dumps_is_compact_utf8_in_key_order() -> None:
    value = {"z": 1, "a": [1, 2.5, None, True], "é": "😀"}
    assert dumps(value) == '{"z":1,"a":[1,2.5,null,true],"é":"😀"}'.encode()


@pytest.mark.parametrize("number", [2**64 - 1, -(2**63), 2**63])
def test_integers_within_64_bits_take_the_fast_path(number: int) -> None:
    text = dumps(number)
    assert text == str(number).encode()
    assert loads(text) == number
    assert type(loads(text)) is int


@pytest.mark.parametrize(
    "number", [2**64, -(2**63) - 1, 2**70, -(2**200), 10**5000], ids=param_id
)
def test_integers_beyond_64_bits_are_written_and_read_exactly(number: int) -> None:
    value = {"n": number, "list": [number, -0.0]}
    text = dumps(value)
    assert text.startswith(b" ")
    assert text[1:2] == b"{"
    result = loads(text)
    assert same(result, value)
    # orjson alone would have turned the integer into a float:
    if abs(number) < 10**300:
        assert type(orjson.loads(text)["n"]) is float


def test_an_integer_past_the_str_digit_limit_round_trips() -> None:
    number = 7**9000  # 7,606 digits: past sys.get_int_max_str_digits()
    text = dumps([number])
    assert text == b" [" + str(Decimal(number)).encode() + b"]"
    assert loads(text) == [number]
    assert loads(b" " + encode_iteratively([number] * 2).encode()) == [number] * 2
    assert decode_iteratively(text.decode()) == [number]


def test_negative_zero_keeps_its_sign_on_both_paths() -> None:
    for text in (dumps(-0.0), dumps([-0.0, 2**64])):
        result = loads(text)
        zero = result if type(result) is float else result[0]
        assert math.copysign(1.0, zero) == -1.0


def test_lone_surrogates_are_escaped_like_json_stringify() -> None:
    text = dumps({"s": "a\ud800b\udfff"})
    assert text == b' {"s":"a\\ud800b\\udfff"}'
    text.decode("utf-8")  # valid UTF-8, unlike the raw surrogates
    assert loads(text) == {"s": "a\ud800b\udfff"}


def test_surrogate_code_points_stay_separate_code_points() -> None:
    pair = "\ud83d\ude00"  # two code points in Python, not the emoji
    assert dumps(pair) == b' "\\ud83d\\ude00"'
    assert loads(dumps(pair)) == pair
    assert loads(dumps(pair)) != "😀"
    assert dumps("😀") == '"😀"'.encode()  # a real astral character is written raw


def test_an_escaped_backslash_before_u_is_not_mistaken_for_a_surrogate() -> None:
    value = ["\\ud800", "\\\\udc00", "\ud800", "\\"]
    assert same(loads(dumps(value)), value)


def test_escaped_surrogates_from_other_writers_decode() -> None:
    # Unmarked text from a JavaScript writer: a lone surrogate escape (orjson refuses
    # it, the exact path accepts it) and a pair (one astral character, as in JS).
    assert loads(b'["\\ud800"]') == ["\ud800"]
    assert loads(b'"\\ud83d\\ude00"') == "😀"
    assert loads(b'["\\ud800","\\ud83d\\ude00"]') == ["\ud800", "😀"]


CONTROL_AND_SPECIAL = "".join(map(chr, range(0x100))) + "\u2028\u2029\ufeff😀"


def test_strings_are_written_as_javascript_json_stringify_writes_them() -> None:
    expected = js_quote(CONTROL_AND_SPECIAL).encode()
    assert dumps(CONTROL_AND_SPECIAL) == expected  # orjson
    big = 2**64
    assert dumps([CONTROL_AND_SPECIAL, big]) == b" [" + expected + b",%d]" % big
    assert encode_iteratively(CONTROL_AND_SPECIAL).encode() == expected
    assert loads(expected) == CONTROL_AND_SPECIAL
    assert loads(b" " + expected) == CONTROL_AND_SPECIAL


def test_strings_with_lone_surrogates_match_json_stringify() -> None:
    text = 'x\ud800\x01\udbff"\\'
    assert dumps(text) == b" " + js_quote(text).encode()


def test_loads_accepts_bytes_and_str_on_both_paths() -> None:
    assert loads(b'{"a":[1]}') == {"a": [1]}
    assert loads('{"a":[1]}') == {"a": [1]}
    assert loads(b' {"a":[1]}') == {"a": [1]}
    assert loads(' {"a":[1]}') == {"a": [1]}


def test_duplicate_keys_keep_the_last_value_on_every_path() -> None:
    text = '{"a":1,"b":2,"a":3}'
    for result in (loads(text), loads(" " + text), decode_iteratively(text)):
        assert result == {"a": 3, "b": 2}
        assert list(result) == ["a", "b"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "[",
        "[1,]",
        "[1 2]",
        "{1:2}",
        '{"a" 1}',
        '{"a":1,}',
        '{"a":1',
        "tru",
        "NaN",
        "Infinity",
        "-Infinity",
        "-",
        "01",
        "1.",
        '"abc',
        '"\x01"',
        "[1]x",
        "[]]",
        "{}}",
    ],
    ids=param_id,
)
def test_invalid_text_raises_value_error_on_every_path(text: str) -> None:
    with pytest.raises(ValueError):
        loads(text)
    with pytest.raises(ValueError):
        loads(" " + text)
    with pytest.raises(ValueError):
        decode_iteratively(text)
    with pytest.raises(ValueError):
        loads(("[" * DEEP) + text)  # too deep for orjson and the stdlib


def test_the_iterative_decoder_reads_whitespace_and_escapes() -> None:
    text = ' \n{ "a" : [ 1 , -2.5e3 , true , false , null , "x\\n\\u00e9\\ud83d\\ude00" ] ,\t"b" : { } }\r\n'
    assert same(decode_iteratively(text), json.loads(text))


def test_dumps_of_a_cycle_raises_instead_of_looping() -> None:
    looped: list[Any] = [2**64]
    looped.append(looped)
    with pytest.raises(ValueError):
        dumps(looped)
    with pytest.raises(ValueError):
        encode_iteratively(looped)


# --------------------------------------------------------------------------------------
# Property tests

SPECIAL_CHARACTERS = [
    "\ud800",
    "\udfff",
    "\ud83d",
    "\ude00",
    "\\",
    "u",
    "d",
    '"',
    "\x00",
]
TEXT = st.text(
    alphabet=st.characters(exclude_categories=()) | st.sampled_from(SPECIAL_CHARACTERS),
    max_size=12,
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(TEXT, children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300)
@given(JSON_VALUES)
def test_loads_dumps_round_trip_is_exact(value: Any) -> None:
    assert is_json_value(value)
    text = dumps(value)
    assert same(loads(text), value)
    assert same(loads(text.decode()), value)


@settings(max_examples=200)
@given(JSON_VALUES)
def test_the_exact_path_round_trips_everything(value: Any) -> None:
    text = b" " + dumps(value).lstrip(b" ")  # a leading space forces the exact path
    assert same(loads(text), value)


@settings(max_examples=200)
@given(JSON_VALUES)
def test_snapshot_and_copy_are_exact_and_detached(value: Any) -> None:
    for copy in (snapshot_json(value), copy_json(value)):
        assert same(copy, value)
        assert not shares_containers(copy, value)


@settings(max_examples=200)
@given(JSON_VALUES)
def test_the_iterative_encoder_writes_the_stdlib_text(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert encode_iteratively(value) == expected


@settings(max_examples=200)
@given(JSON_VALUES, st.sampled_from([None, 1]), st.booleans())
def test_the_iterative_decoder_reads_what_the_stdlib_reads(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    if ascii_only and "\\ud" in text.lower():
        return  # the stdlib joins escaped surrogate pairs; loads keeps them apart
    assert same(decode_iteratively(text), json.loads(text))


@settings(max_examples=100)
@given(JSON_VALUES)
def test_invalid_leaves_are_found_wherever_they_are(value: Any) -> None:
    for bad in ({1: 1}, math.nan, (1,)):
        assert not is_json_value([value, {"x": [bad]}])


# --------------------------------------------------------------------------------------
# js_number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-0.0, "0"),
        (5, "5"),
        (-7, "-7"),
        (2**70, "1180591620717411303424"),
        (1.5, "1.5"),
        (-1.5, "-1.5"),
        (0.1, "0.1"),
        (123.456, "123.456"),
        (100.0, "100"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (1e16, "10000000000000000"),
        (0.000001, "0.000001"),
        (1.5e-6, "0.0000015"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        ("c1", "c1"),
        ([1, [2, None], "x"], "1,2,,x"),
        ([], ""),
        ({"a": 1}, "[object Object]"),
    ],
    ids=param_id,
)
def test_js_number_renders_like_javascript(value: Any, expected: str) -> None:
    assert js_number(value) == expected


def test_js_number_renders_a_self_containing_list_like_javascript() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    assert js_number(looped) == "1,"


def test_js_number_renders_an_integer_past_the_str_digit_limit() -> None:
    number = 7**9000
    assert js_number(number) == str(Decimal(number))
    assert js_number(float(10**300)) == "1e+300"
