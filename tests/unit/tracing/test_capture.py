"""The pure capture core of @traced: secret names, JSON conversion, size limits, argument binding."""

from __future__ import annotations

import datetime as dt
import enum
import json
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.tracing.arguments import ArgumentBinder
from agentotel_eval.tracing.capture import (
    REDACTED,
    is_secret_name,
    redact,
    redact_arguments,
    safe_repr,
    to_json,
    to_text,
    truncate,
)


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "db_password",
        "PASSWORD",
        "api_key",
        "openai_api_key",
        "apiKey",
        "x-api-key",
        "token",
        "access_token",
        "refreshToken",
        "secret",
        "client_secret",
        "Authorization",
        "proxy-authorization",
    ],
)
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["query", "max_tokens", "input_tokens", "token_count", "max_token_limit", "keyword", "author", "city"],
)
def test_not_secret_names(name):
    assert not is_secret_name(name)


def test_redact_keeps_identity_when_nothing_changes_and_copies_otherwise():
    clean = {"a": [1, {"b": "c"}], "d": ("e",)}
    assert redact(clean) is clean
    dirty = {"a": [1, {"token": "t"}], "keep": "k"}
    out = redact(dirty)
    assert out == {"a": [1, {"token": REDACTED}], "keep": "k"}
    assert dirty["a"][1]["token"] == "t"  # the caller's data is untouched
    args = {"password": "p", "x": 1}
    assert redact_arguments(args) == {"password": REDACTED, "x": 1}
    assert args["password"] == "p"


def test_to_json_converts_common_types():
    class Colour(enum.Enum):
        RED = "red"

    value = {
        "when": dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "day": dt.date(2025, 1, 2),
        "colour": Colour.RED,
        "amount": Decimal("1.50"),
        "id": uuid.UUID(int=1),
        "small_bytes": b"\x00\x01",
        "tags": frozenset({"b", "a"}),
        "pair": (1, 2),
    }
    assert json.loads(to_json(value)) == {
        "when": "2025-01-02T03:04:05+00:00",
        "day": "2025-01-02",
        "colour": "red",
        "amount": "1.50",
        "id": "00000000-0000-0000-0000-000000000001",
        "small_bytes": "b'\\x00\\x01'",
        "tags": ["a", "b"],
        "pair": [1, 2],
    }


def test_to_json_pydantic_models_when_available():
    pydantic = pytest.importorskip("pydantic")

    class Query(pydantic.BaseModel):
        text: str
        api_key: str

    assert json.loads(to_json({"q": Query(text="hi", api_key="sk")})) == {
        "q": {"text": "hi", "api_key": REDACTED}
    }


def test_to_json_survives_cycles_and_odd_keys():
    cyclic: dict = {"name": "loop"}
    cyclic["self"] = cyclic
    text = to_json(cyclic, 2000)
    assert len(text) <= 2000
    json.loads(text)
    assert json.loads(to_json({None: 1, 2: "two", (3, 4): "tuple"})) == {
        "null": 1,
        "2": "two",
        "(3, 4)": "tuple",
    }


def test_to_json_non_ascii_is_kept_readable():
    assert to_json({"city": "Zürich 東京"}) == '{"city":"Zürich 東京"}'


@settings(max_examples=100, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=300),
        lambda children: (
            st.lists(children, max_size=30) | st.dictionaries(st.text(max_size=20), children, max_size=30)
        ),
        max_leaves=100,
    ),
    limit=st.integers(min_value=40, max_value=2000),
)
def test_to_json_is_always_valid_json_within_the_limit(value, limit):
    text = to_json(value, limit)
    assert len(text) <= limit
    json.loads(text)
    if len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) <= limit:
        assert json.loads(text) == value  # nothing is changed when it fits


def test_truncate_and_safe_repr():
    assert truncate("abc", 10) == "abc"
    cut = truncate("x" * 1000, 100)
    assert len(cut) <= 100 and cut.endswith("chars]") and "truncated" in cut

    class Broken:
        def __repr__(self):
            raise ValueError("nope")

    assert safe_repr(Broken()) == "<unrepresentable test_truncate_and_safe_repr.<locals>.Broken>"
    assert to_text("plain") == "plain"
    assert to_text({"a": 1}) == '{"a":1}'


def test_argument_binder_names_what_was_passed():
    def f(a, b=2, /, c=3, *rest, d, e=5, **extra):
        pass

    binder = ArgumentBinder(f)
    assert binder.bind((1,), {"d": 4}) == {"a": 1, "d": 4}
    assert binder.bind((1, 2, 3, 4, 5), {"d": 6, "z": 7}) == {
        "a": 1,
        "b": 2,
        "c": 3,
        "rest": [4, 5],
        "d": 6,
        "z": 7,
    }
    assert binder.parameter_names == ("a", "b", "c", "d", "e")

    class C:
        def method(self, x):
            pass

        @classmethod
        def build(cls, y):
            pass

    assert ArgumentBinder(C.method).bind((C(), 1), {}) == {"x": 1}
    assert ArgumentBinder(C.__dict__["build"].__func__).bind((C, 2), {}) == {"y": 2}
    assert ArgumentBinder(len).bind(([1],), {}) == {"obj": [1]}  # builtins with a text signature
    assert ArgumentBinder(print).bind(("a", "b"), {"sep": "-"}) == {"args": ["a", "b"], "sep": "-"}
