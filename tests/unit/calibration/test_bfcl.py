import sys

import pytest
from jsonschema import Draft202012Validator

from agentotel_eval.calibration import bfcl
from agentotel_eval.calibration.bfcl import (
    OPERATORS,
    UNMAPPED,
    build_bfcl_suite,
    build_bfcl_suite_with_stats,
    oracle_types,
    to_json_schema,
)

PER_CATEGORY = 8


@pytest.fixture(scope="module")
def build():
    # the real package data (downloaded into the cache if missing): a failed download fails here, on purpose
    return build_bfcl_suite_with_stats(per_category=PER_CATEGORY, seed=0)


@pytest.fixture(scope="module")
def cases(build):
    return build.cases


def _validator(case, name):
    (tool,) = [tool for tool in case.tools if tool["name"] == name]
    return Draft202012Validator(tool["parameters"])


def test_sample_takes_per_category_entries_and_every_operator(build, cases):
    assert build.entries == PER_CATEGORY * len(bfcl.DEFAULT_CATEGORIES)
    assert {case.meta["category"] for case in cases} == set(bfcl.DEFAULT_CATEGORIES)
    assert {case.operator for case in cases} == set(OPERATORS)
    assert len({case.id for case in cases}) == len(cases)
    assert all(case.suite == "bfcl" and case.answer == "" and case.user_input for case in cases)


def test_labels_are_the_operators_and_agree_with_bfcls_checker(cases):
    for case in cases:
        assert case.labels == OPERATORS[case.operator], case.id
        assert oracle_types(case.oracle) == case.labels, (case.id, case.oracle)
        assert case.oracle["valid"] is (not case.labels), case.id


def test_clean_and_omitted_optional_cases_have_no_labels(cases):
    quiet = [case for case in cases if case.operator in ("none", "omit_optional")]
    assert quiet and all(case.labels == frozenset() for case in quiet)


def test_same_seed_same_cases_other_seed_other_sample(cases):
    again = build_bfcl_suite(per_category=PER_CATEGORY, seed=0)
    assert [case.id for case in again] == [case.id for case in cases]
    assert [case.calls for case in again] == [case.calls for case in cases]
    assert {case.id for case in build_bfcl_suite(per_category=PER_CATEGORY, seed=1)} != {
        case.id for case in cases
    }


def test_an_entrys_cases_do_not_depend_on_the_sample(cases):
    full = {case.id: case for case in build_bfcl_suite(categories=("parallel",))}
    sampled = [case for case in cases if case.meta["category"] == "parallel"]
    assert sampled and all(full[case.id] == case for case in sampled)


def test_converted_schemas_are_json_schema(cases):
    for case in cases:
        for tool in case.tools:
            assert set(tool) == {"name", "description", "parameters"}
            Draft202012Validator.check_schema(tool["parameters"])


def test_unmutated_calls_fit_their_schemas_and_parameter_mutations_do_not(cases):
    for case in cases:
        assert [call.call_id for call in case.calls] == [f"call_{k}" for k in range(len(case.calls))]
        assert all(call.turn == 0 and call.executed and call.result is None for call in case.calls)
        if case.operator in ("none", "omit_optional"):
            for call in case.calls:
                assert _validator(case, call.name).is_valid(call.arguments), (case.id, call)
        if case.operator in ("drop_required", "break_type", "outside_enum"):
            call = case.calls[case.meta["call_index"]]
            assert not _validator(case, call.name).is_valid(call.arguments), case.id


def test_mutated_names_are_not_offered(cases):
    for case in cases:
        if case.operator in ("close_name", "far_name"):
            called = case.calls[case.meta["call_index"]].name
            assert called not in {tool["name"] for tool in case.tools}, case.id


def test_checker_modules_do_not_stay_in_sys_modules(cases):
    assert not [name for name in sys.modules if name == "bfcl_eval" or name.startswith("bfcl_eval.")]


def test_mutations_the_checker_disagrees_with_are_dropped_and_counted(monkeypatch):
    monkeypatch.setitem(bfcl.OPERATORS, "omit_optional", frozenset({"parameter_error"}))
    build = build_bfcl_suite_with_stats(categories=("parallel",), per_category=PER_CATEGORY)
    assert not [case for case in build.cases if case.operator == "omit_optional"]
    assert build.rejected == {"omit_optional: valid": build.rejected_total} and build.rejected_total > 0


@pytest.mark.parametrize(
    ("oracle", "types"),
    [
        ({"valid": True, "error_type": ""}, set()),
        ({"valid": False, "error_type": "simple_function_checker:wrong_func_name"}, {"invalid_function"}),
        ({"valid": False, "error_type": "simple_function_checker:missing_optional"}, {"parameter_error"}),
        ({"valid": False, "error_type": "type_error:nested"}, {"parameter_error"}),
        ({"valid": False, "error_type": "multiple_function_checker:wrong_count"}, {UNMAPPED}),
        (
            {
                "valid": False,
                "error_type": "parallel_function_checker_no_order:cannot_find_match",
                "sub_error_types": ["simple_function_checker:wrong_func_name", "value_error:string"],
            },
            {"invalid_function"},
        ),
        (
            {
                "valid": False,
                "error_type": "parallel_function_checker_no_order:cannot_find_match",
                "sub_error_types": ["simple_function_checker:missing_required", "value_error:others"],
            },
            {"parameter_error"},
        ),
        (
            {
                "valid": False,
                "error_type": "parallel_function_checker_no_order:cannot_find_match",
                "sub_error_types": [],
            },
            {UNMAPPED},
        ),
    ],
)
def test_oracle_types(oracle, types):
    assert oracle_types(oracle) == types


def test_bfcl_types_become_json_schema_types():
    schema = {
        "type": "dict",
        "required": ["a"],
        "properties": {
            "a": {"type": "float"},
            "b": {"type": "any"},
            "c": {"type": "tuple", "items": {"type": "float"}},
            "d": {
                "type": "array",
                "items": {"type": "dict", "properties": {"e": {"type": "integer", "enum": [1]}}},
            },
            "f": {"type": "array", "items": {"type": "string"}, "enum": ["x", "y"]},
        },
    }
    converted = to_json_schema(schema)
    Draft202012Validator.check_schema(converted)
    properties = converted["properties"]
    assert converted["type"] == "object" and converted["required"] == ["a"]
    assert properties["a"] == {"type": "number"} and properties["b"] == {}
    assert properties["c"] == {"type": "array", "items": {"type": "number"}}
    assert properties["d"]["items"] == {
        "type": "object",
        "properties": {"e": {"type": "integer", "enum": [1]}},
    }
    # an array's enum lists allowed items
    assert properties["f"] == {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}
    assert schema["type"] == "dict"  # the input is left as it was
