"""``jsontext`` means what the stdlib's ``json`` means: the same values in, the same values out."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.jsontext import dumps, has_non_finite, loads, stdlib_dumps

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_no_floats = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_values)
def test_dumps_parses_back_to_what_the_stdlib_text_parses_to(value):
    assert json.loads(dumps(value)) == json.loads(stdlib_dumps(value))


@settings(max_examples=300)
@given(_no_floats)
def test_without_floats_the_text_is_the_stdlibs_byte_for_byte(value):
    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_non_finite_floats_are_spelled_out_not_nulled():
    assert json.loads(dumps({"v": [math.nan, math.inf, -math.inf, None], "ok": 1.5})) == {
        "v": ["NaN", "Infinity", "-Infinity", None],
        "ok": 1.5,
    }
    assert dumps(math.nan) == '"NaN"'


@pytest.mark.parametrize(
    "value", [math.nan, [1.0, {"a": -math.inf}], {"b": (math.inf,)}, frozenset({math.nan})]
)
def test_has_non_finite_finds_them_anywhere(value):
    assert has_non_finite(value)


@pytest.mark.parametrize(
    "value",
    [
        {"s": "\ud800 lone surrogate"},  # orjson refuses these; the stdlib writes them
        {"big": 2**70, "neg": -(2**70)},  # beyond 64 bits
        {2: "int key", None: "none key", True: "bool key", 1.5: "float key"},  # keys that are not strings
        b"\x00\x01bytes",
        {"set": {3}, "frozen": frozenset({4}), "tuple": (1, 2)},
        MappingProxyType({"a": 1}),
        OrderedDict(b=2, a=1),
    ],
)
def test_values_orjson_cannot_write_alone_come_out_as_the_stdlib_writes_them(value):
    assert dumps(value) == stdlib_dumps(value)


@settings(max_examples=300)
@given(_values)
def test_loads_reads_what_json_loads_reads(value):
    text = stdlib_dumps(value)
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)


@pytest.mark.parametrize("text", ["NaN", "[Infinity, -Infinity]", str(2**80), ' {"a": 1} ', "\n[1]\t"])
def test_loads_accepts_what_only_the_stdlib_accepts(text):
    expected = json.loads(text)
    got = loads(text)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("text", ["", "{", "[1] [2]", "nope", "{'a': 1}"])
def test_loads_refuses_what_is_not_one_json_value(text):
    with pytest.raises(ValueError):
        loads(text)


_numbers = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_number_texts = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:e}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.17g}"),
    st.integers(19, 400).map(
        lambda e: f"1e{e}"
    ),  # integral floats of 2**64 and more, not written as integers
    st.integers(2**64 - 8, 2**70).map(lambda i: f"{i}.0"),
)


@settings(max_examples=500)
@given(st.lists(_number_texts, min_size=1, max_size=6), st.booleans())
def test_loads_reads_every_number_as_json_loads_does_types_included(numbers, as_object):
    # only texts with 19 digits in a row are walked for a huge integer: the others must read alike anyway
    text = (
        "{" + ",".join(f'"k{i}": {n}' for i, n in enumerate(numbers)) + "}"
        if as_object
        else f"[{', '.join(numbers)}]"
    )
    assert repr(loads(text)) == repr(json.loads(text))
    assert repr(loads(text.encode())) == repr(json.loads(text))


@settings(max_examples=300)
@given(
    st.recursive(
        _numbers | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=12,
    )
)
def test_loads_reads_integers_of_any_size_exactly(value):
    text = json.dumps(value, ensure_ascii=False)
    assert repr(loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize(
    "number",
    [
        -(2**63),
        -(2**63) - 1,
        -(2**63) - 2048,
        -(2**64),
        -(10**20),
        2**63 - 1,
        2**63,
        2**64 - 1,
        2**64,
        2**64 + 1,
        10**30,
    ],
)
def test_loads_reads_integers_at_the_64_bit_edges_exactly(number):
    # orjson reads -2**63 .. 2**64-1 exactly and anything beyond as a float: both edges must fall back
    for text in (str(number), f"[{number}]", f'{{"v": [1, {number}]}}'):
        assert repr(loads(text)) == repr(json.loads(text))


def test_keys_with_a_non_finite_value_beside_them_are_written_as_the_stdlib_writes_keys():
    # the NaN sends the value through ``finite``, which must spell keys as json does, not as str() does
    assert (
        dumps([math.inf, {False: None, None: 1, 1.5: 2, 7: 3, math.inf: 4}])
        == '["Infinity",{"false":null,"null":1,"1.5":2,"7":3,"Infinity":4}]'
    )


def test_a_set_holding_a_nan_is_written_as_a_list_like_any_set():
    assert dumps({"s": {math.nan}}) == '{"s":["NaN"]}' and dumps({"s": frozenset([1])}) == '{"s":[1]}'


def test_types_json_has_no_spelling_for_are_written_as_the_stdlib_with_our_default_writes_them():
    import dataclasses
    from datetime import UTC, datetime

    @dataclasses.dataclass
    class Point:
        x: int

    class Score(float):
        pass

    for value in ({"t": datetime(2024, 1, 1, tzinfo=UTC)}, {"p": Point(1)}, {"f": Score(1.5)}):
        assert dumps(value) == stdlib_dumps(value)
    assert dumps({"f": Score("nan")}) == '{"f":"NaN"}'


@pytest.mark.parametrize(
    "raw", [b'\xef\xbb\xbf{"a": [1]}', '{"a": [1]}'.encode("utf-16"), '{"a": [1]}'.encode("utf-32")]
)
def test_loads_reads_bytes_in_every_encoding_json_loads_reads(raw):
    assert loads(raw) == json.loads(raw) == {"a": [1]}


_nested = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.tuples(inner, inner)
        | st.frozensets(st.integers(), max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_nested)
def test_dumps_means_what_a_reference_encoder_means_and_frozen_containers_encode_as_plain_ones(value):
    """``dumps`` (orjson, with the stdlib behind it) writes what a fresh ``json.JSONEncoder`` means: the same
    value (numbers may be spelled differently, ``1e-9`` for ``1e-09``), and frozen
    containers as plain ones."""
    from agentotel_eval.frozen import freeze
    from agentotel_eval.jsontext import finite, json_default

    reference = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False, default=json_default
    ).encode
    try:
        expected = reference(value)
    except ValueError:
        expected = reference(finite(value))
    text = dumps(value)
    assert json.loads(text) == json.loads(expected)
    assert dumps(freeze(value)) == text
