import json
import re
import sys

import pytest

from agentotel_eval.calibration.sources import package_root
from agentotel_eval.calibration.tau2 import DISTRIBUTION, OPERATORS, VERSION, build_tau2_suite

LIMIT = 4  # tasks per domain: enough for every operator in airline + retail


@pytest.fixture(scope="module")
def root():
    # the real package data (downloaded into the cache if missing): a failed download fails here, on purpose
    return package_root(DISTRIBUTION, VERSION, "tau2")


@pytest.fixture(scope="module")
def cases(root):
    before = list(sys.path)
    built = build_tau2_suite(root, limit=LIMIT, seed=0)
    assert sys.path == before
    return built


@pytest.fixture(scope="module")
def clean(cases):
    return {(c.meta["domain"], c.meta["task_id"]): c for c in cases if c.operator == "none"}


@pytest.fixture
def tau2_env(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root))

    def make(domain):
        return __import__(
            f"tau2.domains.{domain}.environment", fromlist=["get_environment"]
        ).get_environment()

    return make


def _text(value):
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _of(cases, operator):
    found = [c for c in cases if c.operator == operator]
    assert found, operator
    return found


def test_every_operator_appears_with_its_labels(cases):
    assert {c.operator for c in cases} == set(OPERATORS)
    assert {c.meta["domain"] for c in cases} == {"airline", "retail"}
    assert len({c.id for c in cases}) == len(cases)
    for case in cases:
        assert case.suite == "tau2" and case.labels == OPERATORS[case.operator], case.id
        assert case.id == f"tau2/{case.meta['domain']}/{case.meta['task_id']}/{case.operator}"
        assert case.user_input and case.system_prompt and case.answer
        assert [call.turn for call in case.calls] == list(range(len(case.calls)))
        assert len({call.call_id for call in case.calls}) == len(case.calls)
    names = {tool["name"] for tool in cases[0].tools}
    assert all(set(tool) == {"name", "description", "parameters"} for tool in cases[0].tools)
    assert {"get_user_details", "cancel_reservation"} <= names


def test_clean_cases_carry_the_tools_real_results(clean, tau2_env):
    flows = 0
    for case in clean.values():
        assert case.labels == frozenset()
        assert all(call.error is None and call.result not in (None, "", [], {}) for call in case.calls), (
            case.id
        )
        # an id first seen in a result is what a later call passes on
        for j, call in enumerate(case.calls):
            for value in re.findall(r"[#\w]*\d[#\w]*", _text(call.arguments)):
                earlier = [_text(c.result) for c in case.calls[:j]]
                if len(value) >= 5 and value not in case.user_input and any(value in r for r in earlier):
                    flows += 1
    assert flows >= len(clean)
    # the same calls on a fresh tau2 environment return the same results
    case = clean["airline", next(task for domain, task in clean if domain == "airline")]
    env = tau2_env("airline")
    for call in case.calls:
        assert json.loads(env.to_json_str(env.use_tool(call.name, **call.arguments))) == call.result


def test_clean_answer_states_values_of_the_last_write(clean):
    case = next(c for c in clean.values() if c.meta["domain"] == "retail")
    source = case.calls[case.meta["answer_from"]]
    assert isinstance(source.result, dict)
    subject = next(v for k, v in source.result.items() if k.endswith("_id"))
    assert subject in case.answer
    assert case.answer.startswith("Done: ")


def test_swap_dependent_uses_the_value_before_the_call_that_produces_it(cases, clean):
    for case in _of(cases, "swap_dependent"):
        value, consumer, producer = (
            case.meta["value"],
            case.meta["consumer_index"],
            case.meta["producer_index"],
        )
        assert consumer < producer
        assert value in _text(case.calls[consumer].arguments)
        assert value in _text(case.calls[producer].result)
        assert value not in case.user_input
        assert not any(value in _text(c.result) + _text(c.arguments) for c in case.calls[:consumer]), case.id
        original = clean[case.meta["domain"], case.meta["task_id"]]
        assert sorted(c.call_id for c in case.calls) == sorted(c.call_id for c in original.calls)
        assert all(c.error is None for c in case.calls)


def test_unknown_id_is_made_up_and_fails_for_real(cases, clean):
    for case in _of(cases, "unknown_id"):
        k, made_up, value = case.meta["call_index"], case.meta["made_up"], case.meta["value"]
        original = clean[case.meta["domain"], case.meta["task_id"]]
        assert len(made_up) == len(value) and made_up != value
        assert [c.isdigit() for c in made_up] == [c.isdigit() for c in value]
        assert case.calls[:k] == original.calls[:k] and len(case.calls) == k + 1
        last = case.calls[k]
        assert made_up in _text(last.arguments) and value not in _text(last.arguments)
        assert made_up not in case.user_input and made_up not in case.system_prompt
        assert not any(made_up in _text(c.result) + _text(c.arguments) for c in original.calls), case.id
        assert last.error and last.result is None
        assert "sorry" in case.answer and last.error in case.answer


def test_fail_cases_fail_with_the_tools_own_error(cases, clean, tau2_env):
    by_task = {}
    for case in _of(cases, "fail_claim") + _of(cases, "fail_honest") + _of(cases, "repeat_failure"):
        by_task.setdefault((case.meta["domain"], case.meta["task_id"]), {})[case.operator] = case
    for key, group in by_task.items():
        assert set(group) == {"fail_claim", "fail_honest", "repeat_failure"}
        original = clean[key]
        k = group["fail_claim"].meta["call_index"]
        for case in group.values():
            assert case.calls[:k] == original.calls[:k]
            failed = case.calls[k:]
            assert all(c.error == case.meta["error"] and c.result is None for c in failed)
            assert all(
                c.name == original.calls[k].name and c.arguments == original.calls[k].arguments
                for c in failed
            )
        assert len(group["fail_claim"].calls) == len(group["fail_honest"].calls) == k + 1
        assert len(group["repeat_failure"].calls) == k + 3
        assert group["fail_claim"].answer == original.answer
        for honest in (group["fail_honest"], group["repeat_failure"]):
            assert "unable" in honest.answer and honest.meta["error"] in honest.answer
    # the error is what tau2 raises when the record is missing
    domain, task = next(iter(by_task))
    case = by_task[domain, task]["fail_honest"]
    env = tau2_env(domain)
    removed = case.meta["removed"]
    del getattr(env.tools.db, removed["collection"])[removed["key"]]
    call = case.calls[case.meta["call_index"]]
    with pytest.raises(Exception) as raised:
        env.use_tool(call.name, **call.arguments)
    assert str(raised.value) == call.error


def test_change_amount_contradicts_the_result_it_came_from(cases, clean):
    for case in _of(cases, "change_amount"):
        original = clean[case.meta["domain"], case.meta["task_id"]]
        assert case.calls == original.calls and case.answer != original.answer
        stated, recorded = case.meta["stated"], case.meta["recorded"]
        assert stated != recorded
        numbers = re.compile(r"\d+(?:\.\d+)?")
        changed = [
            (a, b)
            for a, b in zip(numbers.findall(original.answer), numbers.findall(case.answer), strict=True)
            if a != b
        ]
        assert len(changed) == 1 and float(changed[0][1]) == abs(stated), case.id


def test_same_seed_same_cases(cases):
    again = build_tau2_suite(domains=("airline",), limit=2, seed=0)
    tasks = {c.meta["task_id"] for c in again}
    assert again == [c for c in cases if c.meta["domain"] == "airline" and c.meta["task_id"] in tasks]
    other = build_tau2_suite(domains=("airline",), limit=2, seed=1)
    assert [c.id for c in other] == [c.id for c in again]
    assert other != again
