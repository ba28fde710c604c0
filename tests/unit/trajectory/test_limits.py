"""A spec is read within limits: one that came with a run (a span attribute, a dataset line) within the small
ones, the config's and code's within larger ones; past a limit, or with a weight that is not a finite number,
it is refused with a ``SpecError`` that names where and which limit, never a ``RecursionError`` or a
bare ``ValueError``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentotel_eval.collector.expectations import Dataset, ExpectationConfigError, ExpectationFinder
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.trajectory import SpecError, parse_spec
from agentotel_eval.trajectory.spec import CONFIG_LIMITS, UNTRUSTED_LIMITS


def nested(levels: int, kind: str = "unordered") -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "a"}
    for _ in range(levels):
        step = {kind: [step]}
    return {"steps": [step]}


def refused(value: Any, limits: Any = CONFIG_LIMITS) -> str:
    with pytest.raises(SpecError) as raised:
        parse_spec(value, "expected_trajectory", limits)
    return str(raised.value)


@pytest.mark.parametrize(
    "written",
    [
        '{"steps": [{"tool": "a", "weight": NaN}]}',
        '{"steps": [{"unordered": [{"tool": "a"}], "weight": Infinity}]}',
    ],
)
def test_a_weight_that_is_not_a_finite_number_is_refused_with_its_key(written: str) -> None:
    message = refused(written)
    assert message.startswith("expected_trajectory.steps[0].weight must be a finite number"), message


@pytest.mark.parametrize("operator", ["$approx", "$gt"])
def test_a_bound_that_is_not_a_finite_number_is_refused_with_its_key(operator: str) -> None:
    message = refused({"steps": [{"tool": "a", "args": {"amount": {operator: float("nan")}}}]})
    assert message.startswith(f"expected_trajectory.steps[0].args.amount: {operator} needs a finite number")


@pytest.mark.parametrize("limits", [UNTRUSTED_LIMITS, CONFIG_LIMITS], ids=["untrusted", "config"])
@pytest.mark.parametrize("as_text", [False, True], ids=["object", "json"])
def test_two_thousand_nested_groups_are_refused_not_a_recursion_error(limits: Any, as_text: bool) -> None:
    written: Any = nested(2000)
    if as_text:  # built as text: json.dumps would itself give up on it
        written = '{"steps": [' + '{"unordered": [' * 2000 + '{"tool": "a"}' + "]}" * 2000 + "]}"
    message = refused(written, limits)
    assert "(limit: nesting)" in message and f"at most {limits.nesting}" in message, message
    if not as_text:  # the path says where the limit was crossed
        assert message.startswith("expected_trajectory.steps[0].unordered[0].unordered[0]"), message


def test_groups_nested_deeper_than_the_limit_name_the_step_and_the_limit() -> None:
    depth = UNTRUSTED_LIMITS.depth
    parse_spec(nested(depth), limits=UNTRUSTED_LIMITS)
    message = refused(nested(depth + 1), UNTRUSTED_LIMITS)
    assert message.startswith(
        "expected_trajectory.steps[0]" + ".unordered[0]" * (depth + 1) + ": groups nested"
    )
    assert "(limit: depth)" in message and "a spec from a span or a dataset" in message
    parse_spec(nested(depth + 1))  # the config's limit is larger


@pytest.mark.parametrize(
    ("written", "limit"),
    [
        ({"steps": ["a"] * (UNTRUSTED_LIMITS.steps + 1)}, "steps"),
        (
            {"steps": [{"tool": "a"}], "forbid": ["x"] * UNTRUSTED_LIMITS.steps},
            "steps",
        ),  # forbid rules count too
        ({"preset": "adk:ANY_ORDER", "expected_tools": ["a"] * (UNTRUSTED_LIMITS.steps + 1)}, "steps"),
        ({"steps": [{"any_of": ["a"] * (UNTRUSTED_LIMITS.alternatives + 1)}]}, "alternatives"),
        ({"steps": [{"tool": "a", "args": {"q": "x" * UNTRUSTED_LIMITS.spec_bytes}}]}, "spec_bytes"),
        (
            json.dumps({"steps": [{"tool": "a", "args": {"q": "x" * UNTRUSTED_LIMITS.spec_bytes}}]}),
            "spec_bytes",
        ),
    ],
)
def test_each_limit_on_a_spec_from_a_run_is_named(written: Any, limit: str) -> None:
    message = refused(written, UNTRUSTED_LIMITS)
    assert f"(limit: {limit})" in message and "a spec from a span or a dataset" in message, message
    parse_spec(written)  # within the config's limits


def test_the_config_limits_are_bounded_too() -> None:
    assert "(limit: steps)" in refused({"steps": ["a"] * (CONFIG_LIMITS.steps + 1)})


def _run(spec: str) -> AgentRun:
    return AgentRun(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        agent_name="a",
        start_time_ns=1,
        end_time_ns=2,
        expected_trajectory=spec,
    )


def test_the_collector_holds_a_span_and_a_dataset_line_to_the_small_limits(tmp_path: Any) -> None:
    big = {"steps": ["a"] * (UNTRUSTED_LIMITS.steps + 1)}
    found = ExpectationFinder().find(_run(json.dumps(big)))
    assert found is not None and found.trajectory is None
    assert found.trajectory_error is not None and "(limit: steps)" in found.trajectory_error
    deep = '{"steps": [' + '{"unordered": [' * 2000 + '{"tool": "a"}' + "]}" * 2000 + "]}"
    found = ExpectationFinder().find(_run(deep))
    assert (
        found is not None
        and found.trajectory_error is not None
        and "(limit: nesting)" in found.trajectory_error
    )
    lines = tmp_path / "ds.jsonl"
    lines.write_text(json.dumps({"input": "q", "expected_trajectory": big}) + "\n")
    with pytest.raises(ExpectationConfigError, match=r"ds.jsonl:1: expected_trajectory.*\(limit: steps\)"):
        Dataset.load(lines)
    lines.write_text('{"input": "q", "expected_trajectory": ' + "[" * 5000 + "]" * 5000 + "}\n")
    with pytest.raises(ExpectationConfigError, match=r"ds\.jsonl:1: nested too deep"):
        Dataset.load(lines)
