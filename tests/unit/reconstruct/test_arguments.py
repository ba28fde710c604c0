"""Argument normalisation: every encoding real instrumentations use -> a dict of the tool's parameters."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.reconstruct.arguments import normalize_arguments, schema_parameter_names
from agentotel_eval.reconstruct.messages import unwrap_tool_result
from agentotel_eval.reconstruct.values import clean_id, numeric_equal, parse_json

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NIGHTS = {"type": "object", "properties": {"nights": {"type": "integer"}}, "required": ["nights"]}
FLIGHT = {
    "type": "object",
    "properties": {
        "origin": {"type": "string"},
        "destination": {"type": "string"},
        "date": {"type": "string"},
    },
    "required": ["origin", "destination", "date"],
}
OPTIONAL_UNITS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("raw", "schema", "params", "encoding"),
    [
        ('{"city": "Paris"}', None, {"city": "Paris"}, "json"),
        ({"city": "Paris"}, None, {"city": "Paris"}, "object"),
        (b'{"city": "Paris"}', None, {"city": "Paris"}, "json"),
        (json.dumps(json.dumps({"city": "Paris"})), None, {"city": "Paris"}, "json"),  # JSON inside JSON
        ("{}", None, {}, "json"),
        ('{"args": [], "kwargs": {"city": "Oslo"}}', None, {"city": "Oslo"}, "args_kwargs"),
        ({"args": ["Oslo"], "kwargs": {}}, CITY, {"city": "Oslo"}, "args_kwargs"),
        (
            {"args": ["Berlin"], "kwargs": {"date": "2025-07-01", "destination": "Rome"}},
            FLIGHT,
            {"origin": "Berlin", "destination": "Rome", "date": "2025-07-01"},
            "args_kwargs",
        ),
        ({"args": ["Oslo"], "kwargs": {}}, None, None, "args_kwargs"),  # positional, names unknowable
        ({"args": ["a", "b"], "kwargs": {}}, CITY, None, "args_kwargs"),  # more values than parameters
        (
            '{"input_str": "{\'city\': \'Paris\'}", "inputs": {"city": "Paris"}, "tags": []}',
            None,
            {"city": "Paris"},
            "input_str",
        ),
        (
            {"input_str": "{'city': 'Paris', 'n': 3}", "tags": []},
            None,
            {"city": "Paris", "n": 3},
            "input_str",
        ),
        ({"input_str": "Rome", "inputs": {}}, CITY, {"city": "Rome"}, "input_str"),
        ("Rome", CITY, {"city": "Rome"}, "scalar"),
        ("Rome", None, None, "scalar"),
        ("Rome", OPTIONAL_UNITS, {"city": "Rome"}, "scalar"),  # the only required parameter
        ("2025", CITY, {"city": "2025"}, "scalar"),  # a string parameter keeps the string
        ("3", NIGHTS, {"nights": 3}, "scalar"),
        (3, NIGHTS, {"nights": 3}, "scalar"),
        (
            ["Berlin", "Rome", "2025-07-01"],
            FLIGHT,
            {"origin": "Berlin", "destination": "Rome", "date": "2025-07-01"},
            "positional",
        ),
        (
            {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Lima"}}},
            None,
            {"city": "Lima"},
            "bedrock",
        ),
        (
            {"toolUseId": "t1", "name": "get_weather", "input": '{"city": "Lima"}'},
            None,
            {"city": "Lima"},
            "bedrock",
        ),
        ("{city: Paris", None, None, "scalar"),  # malformed JSON stays a raw value
        (None, CITY, None, "absent"),
    ],
)
def test_normalize_arguments(raw, schema, params, encoding):
    result = normalize_arguments(raw, schema)
    assert result.params == params
    assert result.encoding == encoding


def test_input_str_carries_the_call_id_in_its_kwargs():
    raw = {
        "input_str": "{'city': 'Paris'}",
        "inputs": {"city": "Paris"},
        "kwargs": {"tool_call_id": "call_1"},
    }
    assert normalize_arguments(raw).call_id == "call_1"


def test_schema_parameter_names_keep_declaration_order():
    assert schema_parameter_names(FLIGHT) == (
        ("origin", "destination", "date"),
        ("origin", "destination", "date"),
    )
    assert schema_parameter_names(None) == ((), ())


def test_numbers_compare_by_value_but_bools_are_not_numbers():
    assert numeric_equal({"amount": 100, "to": "EUR"}, {"amount": 100.0, "to": "EUR"})
    assert numeric_equal([1, {"a": 2.0}], (1.0, {"a": 2}))
    assert not numeric_equal({"flag": True}, {"flag": 1})
    assert not numeric_equal({"a": 1}, {"a": 1, "b": 2})


@pytest.mark.parametrize("placeholder", ["<not specified>", "", "  ", None, "None", "unknown"])
def test_placeholder_ids_are_no_ids(placeholder):
    from agentotel_eval.semconv import TOOL_CALL_ID_PLACEHOLDERS

    assert clean_id(placeholder, TOOL_CALL_ID_PLACEHOLDERS) is None
    assert clean_id("call_1", TOOL_CALL_ID_PLACEHOLDERS) == "call_1"


def test_parse_json_leaves_plain_text_alone():
    assert parse_json("Paris: 18C") == "Paris: 18C"
    assert parse_json('"quoted"') == "quoted"
    assert parse_json("[1, 2") == "[1, 2"


@pytest.mark.parametrize(
    ("recorded", "content", "status", "call_id"),
    [
        # OpenInference LangChain: ToolMessage dump; handle_tool_error gives status OK +
        # ToolMessage status error
        (
            {"type": "tool", "data": {"content": "Unknown city", "tool_call_id": "c1", "status": "error"}},
            "Unknown city",
            "error",
            "c1",
        ),
        # OpenLLMetry LangChain: {"output": <lc ToolMessage>, "kwargs": {...}}
        (
            {
                "output": {
                    "lc": 1,
                    "type": "constructor",
                    "id": ["langchain", "schema", "messages", "ToolMessage"],
                    "kwargs": {"content": "Paris: 18C", "tool_call_id": "c2", "status": "success"},
                },
                "kwargs": {"name": "get_weather"},
            },
            "Paris: 18C",
            None,
            "c2",
        ),
        ('[{"text": "Tokyo: 20C"}]', "Tokyo: 20C", None, None),  # Strands content blocks
        (
            {"toolResult": {"toolUseId": "t9", "status": "error", "content": [{"text": "boom"}]}},
            "boom",
            "error",
            "t9",
        ),
        ('"Athens: 29C sunny"', "Athens: 29C sunny", None, None),  # a JSON string literal
        ('{"result": "Paris"}', {"result": "Paris"}, None, None),
        ("plain text", "plain text", None, None),
    ],
)
def test_tool_results_are_unwrapped(recorded, content, status, call_id):
    part = unwrap_tool_result(json.dumps(recorded) if isinstance(recorded, dict) else recorded)
    assert (part.content, part.status, part.call_id) == (content, status, call_id)
