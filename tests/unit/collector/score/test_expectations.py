import json

import pytest

from agentotel_eval.collector.config import ConfigError
from agentotel_eval.collector.config_scoring import parse_expectations
from agentotel_eval.collector.expectations import (
    Dataset,
    ExpectationConfigError,
    ExpectationFinder,
    find_expectation,
    normalise_input,
)
from agentotel_eval.reconstruct.model import AgentRun


def _run(**kw):
    base = dict(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        agent_name="travel_agent",
        start_time_ns=1,
        end_time_ns=2,
        service_name="travel-bot",
        input="Book  a hotel\nin Rome",
    )
    base.update(kw)
    return AgentRun(**base)


RULES = parse_expectations(
    [
        {"name": "weather", "agent": "weather_*", "expected_tools": ["get_weather"]},
        {
            "name": "rome",
            "service": "travel-*",
            "input_regex": r"(?i)rome",
            "expected_tools": ["book_hotel"],
            "modes": ["exact"],
        },
        {"name": "catch-all", "expected_tools": []},
    ]
)


def test_span_attribute_wins_over_rules_and_dataset(tmp_path):
    ds_path = tmp_path / "ds.jsonl"
    ds_path.write_text(json.dumps({"input": "Book a hotel in Rome", "expected_tools": ["x"]}) + "\n")
    found = find_expectation(_run(expected_tools=("search", "book")), RULES, Dataset.load(ds_path))
    assert (found.expected_tools, found.source) == (("search", "book"), "span_attribute")
    assert found.modes == ("default", "exact", "ordering")


def test_first_matching_rule_in_order():
    assert find_expectation(_run(agent_name="weather_bot"), RULES).source == "rule:weather"
    found = find_expectation(_run(), RULES)
    assert (found.expected_tools, found.modes, found.source) == (("book_hotel",), ("exact",), "rule:rome")
    found = find_expectation(_run(input="hello", service_name="other"), RULES)
    assert (found.expected_tools, found.source) == ((), "rule:catch-all")


def test_dataset_matches_on_whitespace_normalised_input(tmp_path):
    ds_path = tmp_path / "ds.jsonl"
    ds_path.write_text(
        json.dumps({"input": "Book a hotel in Rome", "expected_tools": ["search_hotels", "book_hotel"]})
        + "\n\n"
        + json.dumps({"input": "weather?", "expected_tools": ["get_weather"], "modes": ["ordering"]})
        + "\n"
    )
    dataset = Dataset.load(ds_path)
    found = find_expectation(_run(), (), dataset)
    assert (found.expected_tools, found.source) == (("search_hotels", "book_hotel"), "dataset:ds.jsonl:1")
    assert find_expectation(_run(input="  weather? "), (), dataset).modes == ("ordering",)
    assert find_expectation(_run(input="Book a hotel in Paris"), (), dataset) is None
    assert find_expectation(_run(input=None), (), dataset) is None


def test_no_expectation_is_none_not_empty():
    assert find_expectation(_run(), ()) is None


def test_normalise_input():
    assert normalise_input("  a\t b\n\nc ") == "a b c"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"agent": "x"}], r"^expectations\[0\]: expected_tools or a trajectory table is required"),
        (
            [{"expected_tools": ["a"], "agnet": "x"}],
            r"^expectations\[0\]\.agnet: unknown setting \(known here: agent, ",
        ),
        ([{"expected_tools": "a"}], r"^expectations\[0\]\.expected_tools: .*list of tool names"),
        (
            [{"expected_tools": ["a"], "input_regex": "("}],
            r"^expectations\[0\]\.input_regex: not a valid regex",
        ),
        (
            [{"expected_tools": ["a"], "modes": ["strict"]}],
            r"^expectations\[0\]\.modes: unknown mode\(s\) \['strict'\]",
        ),
        ([{"expected_tools": ["a"]}, "x"], r"^expectations\[1\]: expected a table"),
        ([{"expected_tools": ["a"], "agent": 3}], r"^expectations\[0\]\.agent: expected a string, got 3"),
        ({"expected_tools": ["a"]}, r"^expectations: expected a list"),
    ],
)
def test_invalid_rules_name_the_problem(rules, message):
    with pytest.raises(ConfigError, match=message):
        parse_expectations(rules)


def test_rules_without_a_name_are_named_by_position():
    rules = parse_expectations([{"name": "first", "expected_tools": []}, {"expected_tools": '["a", "b"]'}])
    assert [(r.name, r.expected_tools) for r in rules] == [("first", ()), ("1", ("a", "b"))]


def test_dataset_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"input": "a", "expected_tools": ["x"]}\n{"input": "a", "expected_tools": ["y"]}\n')
    with pytest.raises(
        ExpectationConfigError,
        match=r"bad.jsonl:2: the same input already has a different expectation on line 1",
    ):
        Dataset.load(path)
    path.write_text('{"input": "a", "expected_tools": ["x"]}\nnot json\n')
    with pytest.raises(ExpectationConfigError, match=r"bad.jsonl:2: not valid JSON"):
        Dataset.load(path)
    with pytest.raises(ExpectationConfigError, match=r"missing\.jsonl"):
        Dataset.load(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("modes", [("default", "exact", "ordering"), ("ordering",)])
def test_finder_finds_what_find_expectation_finds(tmp_path, modes):
    ds_path = tmp_path / "ds.jsonl"
    ds_path.write_text(json.dumps({"input": "hello", "expected_tools": ["x"]}) + "\n")
    dataset = Dataset.load(ds_path)
    runs = [
        _run(),
        _run(agent_name="weather_bot"),
        _run(expected_tools=("a",)),
        _run(input="hello", service_name="o"),
        _run(input=None, service_name="o"),
        _run(expected_tools=()),
    ]
    for rules in (RULES, RULES[:2], ()):
        for ds in (dataset, None):
            finder = ExpectationFinder(rules, ds, modes)
            for run in runs:
                assert finder.find(run) == find_expectation(run, rules, ds, modes)


def test_a_trajectory_rule_crosses_to_the_assembler_process_and_scores_the_same():
    """Rules are pickled into the assembler's process; a spec's compiled matchers are closures, so it travels
    as its written form and is read again there."""
    import pickle

    from agentotel_eval.test_case import ToolCall
    from agentotel_eval.trajectory import score_trajectory

    (rule,) = parse_expectations(
        [
            {
                "name": "r",
                "agent": "a",
                "trajectory": {
                    "steps": [
                        {"id": "w", "tool": "who", "args": {"zip": {"$regex": r"\d{5}"}}},
                        {
                            "tool": "get",
                            "args": {"id": {"$ref": "w.result.id"}, "n": {"$approx": 10, "abs": 0.5}},
                        },
                    ]
                },
            }
        ]
    )
    copy = pickle.loads(pickle.dumps(rule))
    assert copy.trajectory is not None and rule.trajectory is not None
    assert copy.trajectory.written == rule.trajectory.written
    calls = [
        ToolCall("who", {"zip": "12345"}, output={"id": 7}),
        ToolCall("get", {"id": 7, "n": 10.4}),
        ToolCall("get", {"id": 8, "n": 10.4}),
    ]
    for spec in (rule.trajectory, copy.trajectory):
        assert score_trajectory(spec, calls).details["extra"] == [2]
        assert score_trajectory(spec, calls[:1] + calls[2:]).score == 0.5
