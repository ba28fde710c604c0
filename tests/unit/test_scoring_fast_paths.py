"""The scoring hot paths give exactly what the general path gives.

Tool correctness without evaluation params scores from the call names alone and remembers each pair of name
lists; these tests hold that path to ``score_tool_calls`` / ``build_reason`` / ``build_log`` (the general path,
which reads ToolCalls) on varied cases, first and repeated, and check that remembered results share no state.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.metrics.tool_correctness import (
    ToolCorrectnessMetric,
    _strict_note,
    build_log,
    build_reason,
    score_tool_calls,
)
from agentotel_eval.test_case import EvalTestCase, ToolCall, as_tool_calls

MODES = [(False, False), (True, False), (False, True), (True, True)]
# few names, so lists overlap, repeat and reorder; odd spellings exercise the quoting in reasons
names = st.sampled_from(["a", "b", "c", "search", " padded ", "x,y", "", "a×2"])
name_lists = st.lists(names, max_size=6)


def general(expected: list[str], called: list[str], exact: bool, ordering: bool, strict: bool, threshold: float):
    """The general path over ToolCalls: (score, success, reason, log)."""
    e = [ToolCall(n) for n in expected]
    c = [ToolCall(n) for n in called]
    outcome = score_tool_calls(e, c, exact_match=exact, check_ordering=ordering)
    raw = outcome.score
    score = 0.0 if strict and raw < 1.0 else raw
    reason = build_reason(outcome, e, c)
    if score != raw:
        reason += _strict_note(raw)
    log = build_log(outcome, e, c, (), strict, raw)
    threshold = 1.0 if strict else threshold
    return score, score >= threshold, reason, log


@settings(max_examples=300, deadline=None)
@given(expected=name_lists, called=name_lists, mode=st.sampled_from(MODES), strict=st.booleans(),
       threshold=st.sampled_from([0.0, 0.5, 1.0]))
def test_names_path_first_and_remembered_equal_the_general_path(expected, called, mode, strict, threshold):
    exact, ordering = mode
    metric = ToolCorrectnessMetric(threshold=threshold, exact_match=exact, check_ordering=ordering, strict_mode=strict)
    score, success, reason, log = general(expected, called, exact, ordering, strict, threshold)
    case = EvalTestCase(input="q", tools_called=list(called), expected_tools=list(expected))
    for _ in range(2):  # computed, then remembered
        result = metric.measure(case)
        assert result.score == score
        assert result.success is success
        assert result.reason == reason
        assert dict(result.evaluation_log) == log
        assert result.status == "ok" and result.metric == metric.metric_name


@settings(max_examples=100, deadline=None)
@given(expected=name_lists, called=name_lists, mode=st.sampled_from(MODES), strict=st.booleans())
def test_remembered_result_equals_a_fresh_instance(expected, called, mode, strict):
    """A remembered result is the result a metric that never saw the pair gives, field for field."""
    exact, ordering = mode
    warm = ToolCorrectnessMetric(exact_match=exact, check_ordering=ordering, strict_mode=strict)
    case = EvalTestCase(input="q", tools_called=list(called), expected_tools=list(expected))
    warm.measure(case)
    again = warm.measure(case)
    fresh = ToolCorrectnessMetric(exact_match=exact, check_ordering=ordering, strict_mode=strict).measure(case)
    assert again.to_dict() == fresh.to_dict()


def test_remembered_results_share_no_log():
    """Each result gets its own log: changing one (a caller may) leaves the next untouched."""
    metric = ToolCorrectnessMetric(check_ordering=True)
    case = EvalTestCase(input="q", tools_called=["b", "a"], expected_tools=["a", "b", "c"])
    first = metric.measure(case)
    pristine = dict(first.evaluation_log)
    assert pristine["out_of_order"] and pristine["matches"]
    for value in first.evaluation_log.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    item["name"] = "tampered"
            value.append("tampered")
    second = metric.measure(case)
    assert second.evaluation_log["missing"] == ["c"]
    assert second.evaluation_log["matches"][0]["name"] == "a"
    assert second.evaluation_log["out_of_order"][0]["name"] == "b"
    assert "tampered" not in str(dict(second.evaluation_log))


def test_names_of_other_types_are_not_remembered_across_types():
    """``1 == True`` in Python: a duck-typed case with such names must not get the other's result."""

    class Call:
        def __init__(self, name):
            self.name = name

    class Case:
        def __init__(self, expected, called):
            self.expected_tools, self.tools_called = expected, called

    metric = ToolCorrectnessMetric(exact_match=True, check_ordering=True)
    one = metric.measure(Case([Call(1)], [Call(1)]))
    true = metric.measure(Case([Call(True)], [Call(True)]))
    assert one.evaluation_log["expected"] == [1] and type(one.evaluation_log["expected"][0]) is int
    assert type(true.evaluation_log["expected"][0]) is bool
    assert not metric._memo  # neither pair was remembered


def test_memo_is_bounded(monkeypatch):
    from agentotel_eval.metrics import tool_correctness

    monkeypatch.setattr(tool_correctness, "_MEMO_SIZE", 4)
    metric = ToolCorrectnessMetric()
    for k in range(10):
        metric.measure(EvalTestCase(input="q", tools_called=[f"t{k}"], expected_tools=["t0"]))
        assert len(metric._memo) <= 4
    assert metric.measure(EvalTestCase(input="q", tools_called=["t0"], expected_tools=["t0"])).score == 1.0


def test_as_tool_calls_copies_a_list_of_calls():
    calls = [ToolCall("a"), ToolCall("b")]
    out = as_tool_calls(calls)
    assert out == calls and out is not calls
    calls.append(ToolCall("c"))
    assert len(out) == 2  # the case does not follow the caller's list
    mixed = as_tool_calls([ToolCall("a"), "b", {"name": "c", "args": {"x": 1}}])
    assert [c.name for c in mixed] == ["a", "b", "c"] and mixed[2].input_parameters == {"x": 1}
    with pytest.raises(TypeError):
        as_tool_calls("abc")


def test_positional_row_maker_equals_the_constructor():
    from dataclasses import fields

    from agentotel_eval.store.rows import EvaluationRow, new_evaluation_row

    values = ["t", "s", "m", 0.5, 0.7, True, "why", {"k": [1]}, "ok", "gpt", 0.01, 5, "E", "1", 0.2, "src", 6]
    assert len(values) == len(fields(EvaluationRow))
    made = new_evaluation_row(*values)
    assert made == EvaluationRow(*values)
    assert type(made) is EvaluationRow and made.key == ("t", "s", "m", "1")
    with pytest.raises(AttributeError):
        made.score = 1.0  # still frozen


def test_result_maker_with_extra_fields_equals_the_constructor():
    from agentotel_eval.metrics.tool_correctness import result_maker

    make = result_maker(extra=("metric", "threshold", "cost_usd", "model", "latency_s"), evaluator="E",
                        evaluator_version="2")
    made = make(0.5, True, "r", {"a": 1}, "m", 0.7, 0.0, None, 0.25)
    assert made == MetricResult("m", 0.5, True, "r", 0.7, "ok", {"a": 1}, None, 0.0, None, "E", "2", 0.25)


def test_detectors_result_is_what_the_constructor_would_give():
    from agentotel_eval.metrics.tool_errors import ToolsErrorMetric

    metric = ToolsErrorMetric(judge=False, threshold=0.6)
    case = EvalTestCase(input="q", tool_calls=[ToolCall("a", status="error", error="boom"),
                                               ToolCall("a", status="error", error="boom")])
    r = metric.measure(case)
    assert r == MetricResult(
        "tool_errors_detectors", r.score, r.success, r.reason, 0.6, "ok", r.evaluation_log, None, 0.0, None,
        "ToolsErrorMetric", metric.version, r.latency_s,
    )
    assert r.score == 1.0 and r.success is False and "failed 2 times in a row" in r.reason
    metric.threshold = 1.0  # a deepeval-style change after construction is honoured
    assert metric.measure(case).threshold == 1.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    | st.tuples(inner, inner) | st.frozensets(st.integers(), max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_to_json_equals_the_reference_encoder(value):
    """``to_json`` (orjson, with the stdlib behind it) must write what a fresh ``json.JSONEncoder`` means: the same
    value (numbers may be spelled differently, ``1e-9`` for ``1e-09``), and frozen containers as plain ones."""
    import json

    from agentotel_eval.frozen import freeze
    from agentotel_eval.jsontext import finite as _finite
    from agentotel_eval.jsontext import json_default as _json_default
    from agentotel_eval.store.rows import to_json

    reference = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False,
                                 default=_json_default).encode
    try:
        expected = reference(value)
    except ValueError:
        expected = reference(_finite(value))
    text = to_json(value)
    assert json.loads(text) == json.loads(expected)
    assert to_json(freeze(value)) == text  # frozen containers encode as the plain ones


def _results(scores: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of up to five results of a few metrics (repeats: one metric twice), scores drawn from ``scores``."""
    return st.lists(
        st.builds(
            MetricResult,
            metric=st.sampled_from(["tool_correctness", "tool_errors_detectors", "x"]),
            score=scores,
            success=st.none() | st.booleans(),
            reason=st.text(max_size=20),
            threshold=st.just(0.5),
            status=st.sampled_from(["ok", "error", "skipped", "pending"]),
            error=st.none() | st.text(max_size=10),
            evaluator=st.sampled_from(["", "ToolCorrectnessMetric"]),
            evaluator_version=st.just("1"),
        ),
        max_size=5,
    )


results_strategy = _results(st.none() | st.floats(0, 1))


def test_as_tool_definitions_copies_a_list_of_definitions():
    from agentotel_eval.test_case import ToolDefinition, as_tool_definitions

    tools = [ToolDefinition("a"), ToolDefinition("b", parameters={"type": "object"})]
    out = as_tool_definitions(tools)
    assert out == tools and out is not tools
    mixed = as_tool_definitions([ToolDefinition("a"), "b", {"type": "function", "function": {"name": "c"}}])
    assert [t.name for t in mixed] == ["a", "b", "c"]


write_back_results = _results(st.none() | st.floats(0, 1) | st.sampled_from([float("nan"), float("inf"), 1, True]))
span_attributes = st.dictionaries(
    st.sampled_from(["a", "b", "agentotel.eval.x.score", "agentotel.eval.x.status",
                     "agentotel.eval.tool_correctness.reason"]),
    st.none() | st.floats(allow_nan=True) | st.text(max_size=5) | st.lists(st.floats(), max_size=2),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(results=write_back_results, attributes=span_attributes, events=st.lists(
    st.tuples(st.sampled_from(["gen_ai.evaluation.result", "other"]), st.booleans(),
              st.sampled_from(["x", "tool_correctness", "y"]), st.floats()), max_size=3),
    time_ns=st.integers(0, 2**63 - 1), whole=st.booleans())
def test_write_back_equals_the_general_path(results, attributes, events, time_ns, whole):
    """One pass over the results writes what score_patch, the events, scored_metrics and updated_span_json
    write, text for text (NaN scores and attributes, repeated metrics, our and other tools' earlier events)."""
    from agentotel_eval.otlp.records import SpanEvent, SpanRecord
    from agentotel_eval.scores import (
        EVALUATOR_ATTRIBUTE,
        evaluation_events,
        score_patch,
        scored_metrics,
        updated_span_json,
        write_back,
    )
    from agentotel_eval.store.rows import events_json, to_json

    span_events = tuple(
        SpanEvent(name, 5, {"gen_ai.evaluation.name": metric, "v": value,
                            **({EVALUATOR_ATTRIBUTE: "E/1"} if ours else {})})
        for name, ours, metric, value in events
    )
    span = SpanRecord("t" * 32, "s" * 16, None, "run", 1, 1, 2, 0, "", attributes, span_events, (), {}, "scope")
    patch = score_patch(results)
    metrics = tuple(scored_metrics(results))
    expected = (to_json(patch), events_json(evaluation_events(results, time_ns)), metrics,
                *(updated_span_json(span, patch, [{"name": e.name, "time_unix_nano": e.time_ns, "attributes": e.attributes}
                                                   for e in evaluation_events(results, time_ns)], metrics) if whole
                  else (None, None)))
    assert write_back(span, results, time_ns, whole) == expected


@settings(max_examples=200, deadline=None)
@given(expected=name_lists, called=name_lists, mode=st.sampled_from(MODES),
       extra=st.sampled_from([{}, {"expectation": "rule:r"}, {"expectation": None, "k": 1.5}, {"mode": "replaced"}]))
def test_row_details_of_remembered_logs_are_the_general_paths_json(expected, called, mode, extra):
    """A result row's details text (a remembered pair's log encoded once, ``extra`` appended) is what encoding the
    merged dict writes, first and remembered, and before or after the result's own log was read."""
    from agentotel_eval.store.rows import EncodedDetails, evaluations_to_arrow, to_json
    from collector.scoring import result_row

    exact, ordering = mode
    metric = ToolCorrectnessMetric(exact_match=exact, check_ordering=ordering)
    case = EvalTestCase(input="q", tools_called=list(called), expected_tools=list(expected))
    for read_first in (False, False, True):
        result = metric.measure(case)
        if read_first:
            dict(result.evaluation_log)
        row = result_row("t", "s", result, 1, 0.5, **extra)
        merged = {**dict(result.evaluation_log), **extra}
        assert type(row.details) is EncodedDetails and row.details == merged
        assert row.details.text == to_json(merged)
        assert evaluations_to_arrow([row]).column("details")[0].as_py() == to_json(merged)


def test_row_details_follow_a_log_changed_before_the_row_was_made():
    from collector.scoring import result_row

    metric = ToolCorrectnessMetric()
    case = EvalTestCase(input="q", tools_called=["a"], expected_tools=["a", "b"])
    metric.measure(case)
    result = metric.measure(case)  # remembered
    result.evaluation_log["missing"].append("changed")
    assert result_row("t", "s", result, 1).details["missing"] == ["b", "changed"]
    assert result_row("t", "s", metric.measure(case), 1).details["missing"] == ["b"]  # the template is intact


def test_encoded_details_read_as_the_stored_value():
    import pickle

    from agentotel_eval.store.rows import EncodedDetails

    details = EncodedDetails('{"a":[1,2.5,null],"b":"NaN"}')
    assert details == {"a": [1, 2.5, None], "b": "NaN"} and dict(details) == {"a": [1, 2.5, None], "b": "NaN"}
    plain = {"a": [1, 2.5, None], "b": "NaN"}
    assert plain.__eq__(details) is NotImplemented and details.__eq__(plain) is True  # a dict asks it back
    assert details != {"a": 1}
    again = pickle.loads(pickle.dumps(details))
    assert type(again) is EncodedDetails and again.text == details.text


def _reference_test_case(run, expected_tools=None):
    """AgentRun.to_test_case as it was: the constructor, with its __post_init__ conversions."""
    expected = expected_tools if expected_tools is not None else run.expected_tools
    return EvalTestCase(
        input=run.input or "", actual_output=run.output, tools_called=list(run.tool_calls),
        expected_tools=list(expected) if expected is not None else None, tool_calls=list(run.tool_calls),
        available_tools=list(run.tool_definitions) or None,
        name=f"{run.agent_name or run.span_name} {run.trace_id}/{run.span_id}",
    )


def _case_fields(case):
    return [(f, getattr(case, f), type(getattr(case, f))) for f in EvalTestCase.__dataclass_fields__]


def test_run_test_case_is_what_the_constructor_makes():
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.reconstruct.model import AgentRun
    from agentotel_eval.test_case import ToolDefinition
    from tests.fixture_traces import fixtures

    runs = [run for fx in fixtures() for run in reconstruct(fx.spans(), fx.logs())]
    runs.append(AgentRun("t", "s", None, 1, 2, input="q", expected_tools=("a", "b"), span_name="x",
                         tool_definitions=(ToolDefinition("a"),)))
    for run in runs:
        for expected in (None, [ToolCall("a")], ["a", {"name": "b"}], []):
            made, reference = run.to_test_case(expected), _reference_test_case(run, expected)
            assert type(made) is EvalTestCase and _case_fields(made) == _case_fields(reference)
            assert made.tools_called is not made.tool_calls  # lists of their own, as the constructor makes
            assert expected is None or made.expected_tools is not expected


def test_fixed_builder_fills_fixed_and_varying_fields():
    from agentotel_eval.reconstruct.fastinit import fixed_builder
    from agentotel_eval.reconstruct.model import Handoff

    build = fixed_builder(Handoff, ("name", "span_id"), {"to_agent": "b", "from_agent": None, "start_time_ns": 3})
    made = build("h", "s")
    assert type(made) is Handoff and made == Handoff("h", "b", None, "s", 3)
    with pytest.raises(TypeError):
        fixed_builder(Handoff, ("name",), {"to_agent": "b"})  # a field neither fixed nor varying
    with pytest.raises(AttributeError):
        made.name = "x"  # still frozen


@settings(max_examples=150, deadline=None)
@given(expected=name_lists, called=name_lists, mode=st.sampled_from(MODES), strict=st.booleans())
def test_measure_names_is_measure(expected, called, mode, strict):
    """Scoring the names a caller holds gives measure's result on the case, first and remembered."""
    exact, ordering = mode
    metric = ToolCorrectnessMetric(exact_match=exact, check_ordering=ordering, strict_mode=strict)
    case = EvalTestCase(input="q", tools_called=list(called), expected_tools=list(expected))
    for _ in range(2):
        by_names = metric.measure_names(tuple(expected), tuple(called))
        assert by_names.to_dict() == metric.measure(case).to_dict()


def test_measure_names_refuses_evaluation_params():
    with pytest.raises(ValueError):
        ToolCorrectnessMetric(evaluation_params=["input_parameters"]).measure_names(("a",), ("a",))


def test_run_scorer_results_are_the_metrics_measure():
    """The scorer takes its own metrics' results without their compatibility attributes: the same results."""
    from agentotel_eval.reconstruct import reconstruct
    from collector.config import default_config
    from collector.scoring import RunScorer
    from collector.scoring_config import parse_expectations
    from tests.fixture_traces import fixtures

    config = dataclasses.replace(
        default_config(), expectations=parse_expectations([{"name": "r", "expected_tools": ["get_weather", "x"]}])
    ).scoring_config()
    scorer = RunScorer(config)
    metrics = [*scorer._correctness.values(), scorer._detectors]
    runs = [run for fx in fixtures() for run in reconstruct(fx.spans(), fx.logs())]
    for run in runs:
        case, timed = scorer.score(run, scorer.expectation(run))
        measured = [m.measure(case) for m in metrics]
        assert [r.to_dict() | {"latency_s": None} for r, _ in timed] == [
            r.to_dict() | {"latency_s": None} for r in measured
        ]


def test_row_details_of_a_pair_with_changing_extra_keys():
    """The text a pair remembers for the last extra keys is used only for equal keys of text."""
    from agentotel_eval.store.rows import to_json
    from collector.scoring import result_row

    metric = ToolCorrectnessMetric(check_ordering=True)
    case = EvalTestCase(input="q", tools_called=["b", "a"], expected_tools=["a", "b"])
    extras = [{"expectation": "rule:a"}, {"expectation": "rule:a"}, {"expectation": "rule:b"}, {"expectation": 1},
              {"expectation": True}, {"expectation": 1.0}, {"expectation": "rule:a"}, {"expectation": "rule:a", "x": "y"},
              {"expectation": "rule:a"}]
    for extra in extras:
        row = result_row("t", "s", metric.measure(case), 1, **extra)
        assert row.details.text == to_json({**dict(metric.measure(case).evaluation_log), **extra})
