import json

import pytest

from agentotel_eval import ToolCall, ToolDefinition
from agentotel_eval.detectors import detect, schemas
from agentotel_eval.detectors.rules.schema_violation import MAX_SCHEMA_ERRORS_PER_CALL
from agentotel_eval.detectors.types import (
    INVALID_FUNCTION,
    PARAMETER_ERROR,
    REPEATED_FAILURE,
)
from tests.support.fixture_traces import fixtures


def detect_invalid_functions(calls, tools):
    return detect(calls, tools, types=[INVALID_FUNCTION])


def detect_parameter_errors(calls, tools):
    return detect(calls, tools, types=[PARAMETER_ERROR])


def detect_repeated_failures(calls):
    return [
        f
        for f in detect(calls, types=[REPEATED_FAILURE])
        if f.rule in ("repeated_failure.same_arguments", "repeated_failure.equivalent_arguments")
    ]


WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1},
            "unit": {"enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
)
# The OpenAI chat shape, as it appears in gen_ai.tool.definitions
CONVERT = {
    "type": "function",
    "function": {
        "name": "convert_currency",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string"},
                "to_currency": {"type": "string"},
            },
            "required": ["amount", "from_currency", "to_currency"],
        },
    },
}
TOOLS = [WEATHER, CONVERT]


# -- invalid_function ----------------------------------------------------------------------------------------
def test_invalid_function_only_when_available_tools_are_known():
    calls = [ToolCall("get_weather", {"city": "Oslo"}), ToolCall("get_wether", {"city": "Oslo"})]
    assert detect_invalid_functions(calls, None) == []
    [finding] = detect_invalid_functions(calls, TOOLS)
    assert (finding.type, finding.tool_name, finding.call_indices) == (INVALID_FUNCTION, "get_wether", (1,))
    assert "call #2" in finding.description and "did you mean 'get_weather'" in finding.description


def test_invalid_function_accepts_plain_names():
    assert detect_invalid_functions([ToolCall("a"), ToolCall("b")], ["a"])[0].call_indices == (1,)


def test_no_tools_at_all_makes_every_call_invalid():
    assert len(detect_invalid_functions([ToolCall("a"), ToolCall("b")], [])) == 2


# -- parameter_error -----------------------------------------------------------------------------------------
def kinds(findings):
    return [(f.call_indices, f.argument, f.description.split(": ", 1)[1]) for f in findings]


def test_missing_required_argument():
    assert kinds(detect_parameter_errors([ToolCall("get_weather", {"days": 2})], TOOLS)) == [
        ((0,), "city", "missing required argument 'city'"),
    ]


def test_each_parameter_error_says_its_subtype_rule_and_evidence():
    """The kinds BFCL's checker tells apart are told apart here, each with the rule and the
    values it compared."""
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["city", "date"],
        "properties": {
            "city": {"type": "string", "pattern": "^[A-Z][a-z]+$"},
            "date": {"type": "string", "format": "date"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "email": {"type": "string", "format": "email"},
        },
    }
    tools = [ToolDefinition("forecast", parameters=schema)]

    def found(args):
        return [
            (f.subtype, f.argument, f.rule)
            for f in detect_parameter_errors([ToolCall("forecast", args)], tools)
        ]

    good = {"city": "Oslo", "date": "2026-12-03"}
    assert found(good) == []
    assert found({"date": "2026-12-03"}) == [("missing_required", "city", "parameter_error.schema.required")]
    assert found({**good, "zip": "0150"}) == [
        ("unexpected_param", None, "parameter_error.schema.additionalProperties")
    ]
    assert found({**good, "days": "3"}) == [("wrong_type", "days", "parameter_error.schema.type")]
    assert found({**good, "unit": "kelvin"}) == [("value_not_allowed", "unit", "parameter_error.schema.enum")]
    assert found({**good, "date": "03/12/2026"}) == [("bad_format", "date", "parameter_error.schema.format")]
    assert found({**good, "email": "not-an-address"}) == [
        ("bad_format", "email", "parameter_error.schema.format")
    ]
    assert found({**good, "city": "oslo"}) == [("pattern_mismatch", "city", "parameter_error.schema.pattern")]
    assert found({**good, "days": 30}) == [("out_of_range", "days", "parameter_error.schema.maximum")]
    [unit] = detect_parameter_errors([ToolCall("forecast", {**good, "unit": "kelvin"})], tools)
    assert unit.to_dict()["evidence"] == {"value": '"kelvin"', "schema": {"enum": ["celsius", "fahrenheit"]}}
    [bad_json] = detect_parameter_errors([ToolCall("forecast", raw_arguments="{city: Oslo")], tools)
    assert (bad_json.subtype, bad_json.rule) == ("unparseable_arguments", "parameter_error.json")


def test_wrong_type_enum_and_unexpected_argument():
    call = ToolCall("get_weather", {"city": 5, "unit": "kelvin", "zip": "0150"})
    found = kinds(detect_parameter_errors([call], TOOLS))
    assert ((0,), "city", "argument 'city' is integer 5, expected string") in found
    assert ((0,), "unit", 'argument \'unit\' is "kelvin", not one of ["celsius", "fahrenheit"]') in found
    assert any("'zip' was unexpected" in text for _, _, text in found)
    assert len(found) == 3


def test_numbers_follow_json_schema():
    ok = [
        ToolCall("get_weather", {"city": "Oslo", "days": 3}),
        ToolCall("get_weather", {"city": "Oslo", "days": 3.0}),  # 3.0 IS an integer in JSON Schema
        ToolCall(
            "convert_currency", {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}
        ),  # int is a number
    ]
    assert detect_parameter_errors(ok, TOOLS) == []
    bad = [
        ToolCall("get_weather", {"city": "Oslo", "days": 2.5}),
        ToolCall("get_weather", {"city": "Oslo", "days": True}),
    ]
    assert [f.argument for f in detect_parameter_errors(bad, TOOLS)] == ["days", "days"]
    assert "'days' is number 2.5, expected integer" in detect_parameter_errors(bad, TOOLS)[0].description


def test_integers_by_value_in_draft_4_schemas_too():
    tool = ToolDefinition(
        "t",
        parameters={
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {"n": {"type": "integer"}},
        },
    )
    assert detect_parameter_errors([ToolCall("t", {"n": 100.0})], [tool]) == []


def test_arguments_that_are_not_an_object():
    calls = [
        ToolCall("get_weather", raw_arguments="{'city': Oslo"),  # not JSON
        ToolCall("get_weather", raw_arguments='["Oslo"]'),  # JSON, but not an object
        ToolCall("get_weather", "Oslo"),  # type: ignore[arg-type]  # a bare string as the arguments
    ]
    found = detect_parameter_errors(calls, TOOLS)
    assert [f.call_indices for f in found] == [(0,), (1,), (2,)]
    assert "not valid JSON" in found[0].description
    assert "the arguments are array" in found[1].description and "expected object" in found[1].description
    assert "the arguments are string" in found[2].description


def test_unknown_arguments_and_unknown_schemas_are_not_checked():
    calls = [
        ToolCall("get_weather"),
        ToolCall("no_schema", {"anything": 1}),
        ToolCall("get_weather", raw_arguments=""),
    ]
    tools = [*TOOLS, ToolDefinition("no_schema")]
    found = detect_parameter_errors(calls, tools)
    # names-only call: unchecked; no schema: unchecked; empty raw string = no arguments -> missing city
    assert [(f.call_indices, f.argument) for f in found] == [((2,), "city")]


def test_invalid_schema_is_skipped_not_blamed_on_the_agent():
    broken = ToolDefinition("t", parameters={"type": "object", "properties": {"x": {"type": "no-such-type"}}})
    assert detect_parameter_errors([ToolCall("t", {"x": 1})], [broken]) == []


def test_validators_are_cached_per_schema():
    schemas.validator.cache_clear()
    calls = [ToolCall("get_weather", {"city": "Oslo"}) for _ in range(50)]
    detect_parameter_errors(calls, TOOLS)
    detect_parameter_errors(
        calls, [WEATHER.__class__(WEATHER.name, None, json.loads(json.dumps(WEATHER.parameters)))]
    )
    info = schemas.validator.cache_info()
    assert info.misses == 1 and info.hits == 99


def test_schema_errors_per_call_are_capped():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30)}}
    call = ToolCall("t", {f"p{i}": i for i in range(30)})
    found = detect_parameter_errors([call], [ToolDefinition("t", parameters=schema)])
    assert len(found) == MAX_SCHEMA_ERRORS_PER_CALL + 1
    assert "20 more schema violation(s)" in found[-1].description


# -- repeated_failure ----------------------------------------------------------------------------------------
def fail(name, **args):
    return ToolCall(name, args, status="error", error="UnknownCityError: Unknown city")


def test_repeated_failure_same_tool_same_arguments():
    calls = [
        fail("get_weather", city="Atlantis"),
        fail("get_weather", city="Atlantis"),
        fail("get_weather", city="Atlantis"),
    ]
    [finding] = detect_repeated_failures(calls)
    assert (finding.type, finding.call_indices) == (REPEATED_FAILURE, (0, 1, 2))
    assert "failed 3 times in a row" in finding.description and "Atlantis" in finding.description


def test_other_tools_in_between_do_not_break_the_streak():
    calls = [fail("get_weather", city="A"), ToolCall("log", {}, status="ok"), fail("get_weather", city="A")]
    assert detect_repeated_failures(calls)[0].call_indices == (0, 2)


@pytest.mark.parametrize(
    "calls",
    [
        [
            fail("get_weather", city="Atlantis"),
            ToolCall("get_weather", {"city": "Athens"}, status="ok"),
        ],  # recovered
        [fail("get_weather", city="Atlantis"), fail("get_weather", city="Athens")],  # changed the arguments
        [
            fail("get_weather", city="A"),
            ToolCall("get_weather", {"city": "A"}, status="ok"),
            fail("get_weather", city="A"),
        ],
        [fail("get_weather", city="A")],
        [
            ToolCall("get_weather", {"city": "A"}, status="ok"),
            ToolCall("get_weather", {"city": "A"}, status="ok"),
        ],
    ],
    ids=["recovered", "new-arguments", "success-between", "single", "no-failures"],
)
def test_not_a_repeated_failure(calls):
    assert detect_repeated_failures(calls) == []


def test_numerically_equal_arguments_are_the_same():
    assert len(detect_repeated_failures([fail("t", n=100), fail("t", n=100.0)])) == 1


def test_two_separate_streaks():
    calls = [fail("a", x=1), fail("a", x=1), fail("a", x=2), fail("a", x=2)]
    assert [f.call_indices for f in detect_repeated_failures(calls)] == [(0, 1), (2, 3)]


# -- all together --------------------------------------------------------------------------------------------
def test_detect_orders_findings_and_filters_types():
    calls = [
        fail("get_weather", city="X"),
        fail("get_weather", city="X"),
        ToolCall("nope", {}),
        ToolCall("get_weather", {}),
    ]
    found = detect(calls, TOOLS)
    assert [(f.type, f.call_indices) for f in found] == [
        (REPEATED_FAILURE, (0, 1)),
        (INVALID_FUNCTION, (2,)),
        (PARAMETER_ERROR, (3,)),
    ]
    assert [f.type for f in detect(calls, TOOLS, types=[PARAMETER_ERROR])] == [PARAMETER_ERROR]
    assert found[0].to_dict() == {
        "type": REPEATED_FAILURE,
        "subtype": "same_arguments",
        "rule": "repeated_failure.same_arguments",
        "description": found[0].description,
        "tool_name": "get_weather",
        "call_indices": [0, 1],
        "argument": None,
        "evidence": {
            "arguments": '{"city": "X"}',
            "error": found[0].to_dict()["evidence"]["error"],
            "times": 2,
        },
        "confidence": 1.0,
        "uncertain": False,
    }
    assert json.loads(json.dumps([f.to_dict() for f in found]))[1]["evidence"] == {
        "called": "nope",
        "offered": ["convert_currency", "get_weather"],
        "closest": None,
    }


def test_available_tools_must_be_a_list():
    with pytest.raises(TypeError):
        detect([], "get_weather")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fixture",
    [f for f in fixtures() if f.entry["scenario"] in ("error", "repeat", "parallel")],
    ids=lambda f: f.name,
)
def test_real_runs_from_the_fixture_manifest(fixture):
    """Ground-truth calls of real framework runs: a failure followed by a corrected call, repeats with new
    arguments, parallel calls. None is a repeated failure; with the tools they had, none is invalid."""
    entry = fixture.entry
    calls = [
        ToolCall(name, args, status=outcome, error="boom" if outcome == "error" else None)
        for name, args, outcome in zip(
            entry["ground_truth_tools"],
            entry["ground_truth_args"],
            entry["ground_truth_outcomes"],
            strict=True,
        )
    ]
    known = {"get_weather", "convert_currency"}  # the names of TOOLS
    offered = [
        *TOOLS,
        *sorted(set(entry["ground_truth_tools"]) - known),
    ]  # plugin-qualified names (Semantic Kernel)
    assert detect(calls, offered) == []
    assert [f.call_indices for f in detect(calls, ["get_weather"], types=[INVALID_FUNCTION])] == [
        (i,) for i, c in enumerate(calls) if c.name != "get_weather"
    ]
    doubled = [c for call in calls for c in (call, call)]
    expected = [(2 * i, 2 * i + 1) for i, c in enumerate(calls) if c.status == "error"]
    assert [f.call_indices for f in detect_repeated_failures(doubled)] == expected


# -- the fast path never says "valid" where jsonschema would not ---------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentotel_eval.detectors.schemas import quick_check as _quick_check  # noqa: E402
from agentotel_eval.detectors.schemas import validator as _validator  # noqa: E402
from agentotel_eval.frozen import freeze  # noqa: E402

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["a", "b", "c", ""]),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["x"]), st.integers(0, 1), max_size=1),
)
_PROPERTY = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(
            st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"]),
            st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1, max_size=2, unique=True),
        ),
        "enum": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
        "description": st.just("d"),
    },
)
_SCHEMA = st.builds(
    lambda props, required, extra: {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": extra,
    },
    st.dictionaries(st.sampled_from(["p", "q", "r"]), _PROPERTY, max_size=3),
    st.lists(st.sampled_from(["p", "q", "r"]), max_size=2, unique=True),
    st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(_SCHEMA, st.dictionaries(st.sampled_from(["p", "q", "r", "s"]), _VALUES, max_size=4))
def test_the_quick_check_agrees_with_jsonschema(schema, instance):
    frozen = freeze(schema)
    quick = _quick_check(frozen)
    assert quick is not None  # this shape is the fast path's whole point
    assert quick(instance) == _validator(frozen).is_valid(instance)


def test_the_quick_check_leaves_other_shapes_to_jsonschema():
    for schema in (
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
        {"type": "object", "properties": {"o": {"type": "object", "properties": {"x": {"type": "string"}}}}},
        {"anyOf": [{"type": "object"}]},
        {"type": "object", "properties": {"e": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    ):
        assert _quick_check(freeze(schema)) is None


def test_a_key_the_schema_does_not_name_is_unexpected_unless_other_keys_are_allowed():
    """BFCL's checker counts an argument the function does not declare as an error; JSON Schema lets it pass
    when ``additionalProperties`` is not given, so the detectors read the declared names."""

    def found(schema, arguments):
        tool = {"name": "f", "parameters": schema}
        return [
            (f.subtype, f.argument, f.rule)
            for f in detect([ToolCall("f", arguments)], [tool], types=[PARAMETER_ERROR])
        ]

    open_by_silence = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert found(open_by_silence, {"city": "Oslo"}) == []
    assert found(open_by_silence, {"city": "Oslo", "verbose": True}) == [
        ("unexpected_param", "verbose", "parameter_error.undeclared")
    ]
    assert found({"type": "object", "properties": {}}, {"x": 1}) == [
        ("unexpected_param", "x", "parameter_error.undeclared")
    ]
    assert found({**open_by_silence, "additionalProperties": True}, {"city": "Oslo", "verbose": True}) == []
    assert found({**open_by_silence, "patternProperties": {"^x-": {}}}, {"city": "Oslo", "x-a": 1}) == []


def test_a_required_argument_a_partial_capture_lost_is_not_reported_missing():
    from agentotel_eval.detectors import could_not_run
    from agentotel_eval.test_case import PARTIAL_SOURCE

    book = {
        "name": "book_hotel",
        "parameters": {
            "type": "object",
            "required": ["city", "nights"],
            "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
        },
    }
    lost = ToolCall(
        "book_hotel", {"city": "Rome"}, sources={"arguments": "request:langtrace-langchain" + PARTIAL_SOURCE}
    )
    assert detect([lost], [book]) == []
    assert any("keeps only some argument values" in n for n in could_not_run([lost], [book]))
    whole = ToolCall("book_hotel", {"city": "Rome"}, sources={"arguments": "request:gen_ai"})
    assert [f.subtype for f in detect([whole], [book])] == ["missing_required"]
    wrong = ToolCall(
        "book_hotel", {"city": 3}, sources={"arguments": "request:langtrace-langchain" + PARTIAL_SOURCE}
    )
    assert [f.subtype for f in detect([wrong], [book])] == ["wrong_type"]  # what was kept is still checked
