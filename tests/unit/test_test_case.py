import copy
import json
import pickle

import pytest

from agentotel_eval import EvalTestCase, MLLMImage, ModelTestCase, ToolCall, ToolCallParams, ToolDefinition


def test_tool_call_is_immutable_and_hashable_with_nested_values():
    call = ToolCall("search", {"q": "paris", "filters": {"stars": [4, 5]}}, output=[{"id": 1}])
    assert isinstance(hash(call), int)
    assert call.input_parameters == {"q": "paris", "filters": {"stars": [4, 5]}}
    with pytest.raises(TypeError):
        call.input_parameters["q"] = "rome"  # type: ignore[index]
    with pytest.raises(TypeError):
        call.input_parameters["filters"]["stars"].append(3)  # type: ignore[index]
    with pytest.raises(AttributeError):
        call.name = "other"  # type: ignore[misc]
    assert json.loads(json.dumps(call.input_parameters)) == {"q": "paris", "filters": {"stars": [4, 5]}}


def test_caller_mutation_does_not_leak_into_call():
    args = {"q": "paris"}
    call = ToolCall("search", args)
    args["q"] = "rome"
    assert call.input_parameters == {"q": "paris"}


def test_equal_calls_hash_equal_and_stay_distinct_in_lists():
    a, b = ToolCall("x", {"k": [1, 2]}), ToolCall("x", {"k": [1, 2]})
    assert a == b and hash(a) == hash(b)
    case = EvalTestCase("q", "a", tools_called=[a, b])
    assert len(case.tools_called) == 2


def test_tool_call_survives_copy_and_pickle():
    call = ToolCall("x", {"k": {"n": [1]}}, status="error", span_id="ab" * 8)
    assert copy.deepcopy(call) == call
    assert pickle.loads(pickle.dumps(call)) == call


def test_tool_call_rejects_bad_values():
    with pytest.raises(TypeError):
        ToolCall(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ToolCall("x", status="failed")


def test_test_case_accepts_mixed_names_and_calls():
    case = EvalTestCase(
        "q",
        "a",
        tools_called=["a", ToolCall("b", {"x": 1}), {"name": "c", "arguments": {"y": 2}}],
        expected_tools=["a", "b"],
    )
    assert [c.name for c in case.tools_called] == ["a", "b", "c"]
    assert case.tools_called[2].input_parameters == {"y": 2}
    assert all(isinstance(c, ToolCall) for c in case.expected_tools)


def test_test_case_rejects_single_string_as_list():
    with pytest.raises(TypeError):
        EvalTestCase("q", "a", tools_called="search")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "definition",
    [
        "get_weather",
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
        {"name": "get_weather", "input_schema": {"type": "object"}},
        {"name": "get_weather", "parameters_json_schema": {"type": "object"}},
        {"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}},
    ],
)
def test_tool_definitions_in_every_shape(definition):
    parsed = ToolDefinition.from_value(definition)
    assert parsed.name == "get_weather"
    if not isinstance(definition, str):
        assert parsed.parameters == {"type": "object"}


def test_evaluation_params_parse():
    assert ToolCallParams.parse("input_parameters") is ToolCallParams.INPUT_PARAMETERS
    assert ToolCallParams.parse(ToolCallParams.OUTPUT) is ToolCallParams.OUTPUT
    with pytest.raises(ValueError, match="unknown evaluation param"):
        ToolCallParams.parse("inputs")


def test_model_test_case_holds_text_and_images(tmp_path):
    image_file = tmp_path / "cat.png"
    image_file.write_bytes(b"\x89PNG")
    case = ModelTestCase(
        input=["Draw a cat", MLLMImage(url=str(image_file))],
        actual_output=["done", MLLMImage(url="https://example.com/cat.png")],
        tools_called=[ToolCall(name="draw_image")],
        expected_tools=[ToolCall(name="draw_image")],
    )
    assert case.input[1].local is True
    assert case.actual_output[1].local is False
    with pytest.raises(TypeError):
        ModelTestCase(input=[3], actual_output=["x"])  # type: ignore[list-item]


def test_test_case_round_trips_through_json():
    case = EvalTestCase(
        "Book a hotel",
        "Booked.",
        tools_called=[
            "search",
            ToolCall("book", {"n": [1, {"x": 2.5}]}, status="error", error="ValueError", span_id="ab" * 8),
        ],
        expected_tools=["search", "book"],
        context=["ctx"],
        tool_calls=[
            ToolCall("book", {"n": 1}, output={"ok": False}, status="error", sources={"name": "gen_ai"})
        ],
        available_tools=[
            {"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}
        ],
        name="c1",
        metadata={"k": "v"},
    )
    data = json.loads(json.dumps(case.to_dict()))
    assert EvalTestCase.from_dict(data) == case
    assert "expected_output" not in data


def test_as_tool_calls_copies_a_list_of_calls():
    from agentotel_eval.test_case import as_tool_calls

    calls = [ToolCall("a"), ToolCall("b")]
    out = as_tool_calls(calls)
    assert out == calls and out is not calls
    calls.append(ToolCall("c"))
    assert len(out) == 2  # the case does not follow the caller's list
    mixed = as_tool_calls([ToolCall("a"), "b", {"name": "c", "args": {"x": 1}}])
    assert [c.name for c in mixed] == ["a", "b", "c"] and mixed[2].input_parameters == {"x": 1}
    with pytest.raises(TypeError):
        as_tool_calls("abc")


def test_as_tool_definitions_copies_a_list_of_definitions():
    from agentotel_eval.test_case import as_tool_definitions

    tools = [ToolDefinition("a"), ToolDefinition("b", parameters={"type": "object"})]
    out = as_tool_definitions(tools)
    assert out == tools and out is not tools
    mixed = as_tool_definitions([ToolDefinition("a"), "b", {"type": "function", "function": {"name": "c"}}])
    assert [t.name for t in mixed] == ["a", "b", "c"]


def test_a_run_as_a_test_case_has_lists_of_its_own():
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.reconstruct.model import AgentRun
    from tests.support.fixture_traces import fixtures

    runs = [run for fx in fixtures() for run in reconstruct(fx.spans(), fx.logs())]
    runs.append(
        AgentRun(
            "t",
            "s",
            None,
            1,
            2,
            input="q",
            expected_tools=("a", "b"),
            span_name="x",
            tool_definitions=(ToolDefinition("a"),),
        )
    )
    for run in runs:
        for expected in (None, [ToolCall("a")], ["a", {"name": "b"}], []):
            made = run.to_test_case(expected)
            assert made.input == (run.input or "") and made.actual_output == run.output
            assert made.tools_called == list(run.tool_calls) == made.tool_calls
            assert made.tools_called is not made.tool_calls  # lists of their own
            want = expected if expected is not None else run.expected_tools
            assert made.expected_tools == (None if want is None else [ToolCall.from_value(v) for v in want])
            assert expected is None or made.expected_tools is not expected
            assert made.available_tools == (list(run.tool_definitions) or None)
            assert made.name == f"{run.agent_name or run.span_name} {run.trace_id}/{run.span_id}"
