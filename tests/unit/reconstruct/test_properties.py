"""Properties of the reconstruction over the real fixtures: arrival order, batching,
duplicates, missing spans.

What is guaranteed (docs/reconstruction.md, "Guarantees"):
- any order, any batching, any duplication of the same spans and logs gives an identical result;
- a missing middle span that is neither a run, a tool nor an LLM span changes no call and no run's calls;
- a missing run span loses no call: each call is attributed to a run that really encloses it;
- a missing tool span loses only that call, and not even that one when the model's request for it and its
  result (fed back in a later LLM input) were recorded.
"""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct import AgentRun, reconstruct
from agentotel_eval.reconstruct.spans import classify
from tests.support.fixture_traces import Fixture, fixtures

FIXTURES = fixtures()
# Every fixture, a few random draws each (sampling fixtures with hypothesis would favour the first ones).
SETTINGS = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
EACH_FIXTURE = pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)


BY_NAME = {f.name: f for f in FIXTURES}


@cache
def _records_of(name: str) -> tuple[tuple[SpanRecord, ...], tuple]:
    return tuple(BY_NAME[name].spans("protobuf")), tuple(BY_NAME[name].logs("protobuf"))


def _records(fixture: Fixture) -> tuple[tuple[SpanRecord, ...], tuple]:
    return _records_of(fixture.name)


@cache
def _baseline_of(name: str) -> tuple[AgentRun, ...]:
    spans, logs = _records_of(name)
    return tuple(reconstruct(spans, logs))


def _baseline(fixture: Fixture) -> tuple[AgentRun, ...]:
    return _baseline_of(fixture.name)


def _same(runs: list[AgentRun], expected: tuple[AgentRun, ...]) -> None:
    assert tuple(runs) == expected
    assert [r.extra for r in runs] == [r.extra for r in expected]  # extra is excluded from ==


def _signature(call) -> tuple:
    return (
        call.name,
        repr(sorted((call.input_parameters or {}).items())),
        call.status,
        call.call_id,
        repr(call.output),
    )


@EACH_FIXTURE
@SETTINGS
@given(rnd=st.randoms(use_true_random=False))
def test_span_and_log_order_does_not_matter(fixture, rnd):
    spans, logs = (list(x) for x in _records(fixture))
    rnd.shuffle(spans)
    rnd.shuffle(logs)
    _same(reconstruct(spans, logs), _baseline(fixture))


@EACH_FIXTURE
@SETTINGS
@given(
    rnd=st.randoms(use_true_random=False),
    batches=st.integers(min_value=1, max_value=6),
    resend=st.floats(min_value=0.0, max_value=1.0),
)
def test_batches_with_resends_give_the_same_runs(fixture, rnd, batches, resend):
    """Exporter batches (mixed order), some re-sent after a timeout, concatenated in any order."""
    spans = list(_records(fixture)[0])
    rnd.shuffle(spans)
    cuts = sorted(rnd.sample(range(len(spans) + 1), min(batches - 1, len(spans) + 1)))
    parts = [spans[a:b] for a, b in zip([0, *cuts], [*cuts, len(spans)], strict=True)]
    parts += [p for p in parts if rnd.random() < resend]
    rnd.shuffle(parts)
    stream = [s for part in parts for s in part]
    logs = list(_records(fixture)[1])
    logs += [lg for lg in logs if rnd.random() < resend]
    _same(reconstruct(stream, logs), _baseline(fixture))


@EACH_FIXTURE
@SETTINGS
@given(rnd=st.randoms(use_true_random=False))
def test_duplicated_spans_change_nothing(fixture, rnd):
    spans, logs = (list(x) for x in _records(fixture))
    dupes = [s for s in spans if rnd.random() < 0.5]
    _same(reconstruct([*spans, *dupes, *spans[:1]], [*logs, *logs]), _baseline(fixture))


def _middle_spans(fixture: Fixture, want) -> list[SpanRecord]:
    spans = _records(fixture)[0]
    ids = {s.span_id for s in spans}
    parents = {s.parent_span_id for s in spans}
    return [s for s in spans if s.parent_span_id in ids and s.span_id in parents and want(classify(s))]


def _cases(want) -> list[tuple[Fixture, SpanRecord]]:
    return [(f, s) for f in FIXTURES for s in _middle_spans(f, want)]


def _has_logs(fixture: Fixture, span: SpanRecord) -> bool:
    return any(log.span_id == span.span_id for log in _records(fixture)[1])


# (a span's log records go with it: a span that holds some is evidence, not plumbing)
PLAIN_MIDDLE = [
    (f, s) for f, s in _cases(lambda role: not (role.run or role.tool or role.llm)) if not _has_logs(f, s)
]
RUN_MIDDLE = _cases(lambda role: role.run is not None)
TOOL_MIDDLE = _cases(lambda role: role.tool is not None and role.run is None)


def _drop(fixture: Fixture, span: SpanRecord) -> list[AgentRun]:
    spans, logs = _records(fixture)
    return reconstruct([s for s in spans if s.span_id != span.span_id], logs)


def test_there_are_middle_spans_of_every_kind():
    assert len(PLAIN_MIDDLE) > 30 and len(RUN_MIDDLE) > 10 and len(TOOL_MIDDLE) >= 4


def _case_id(case) -> str:
    return f"{case[0].name}-{case[1].name}-{case[1].span_id[:6]}"


@pytest.mark.parametrize("case", PLAIN_MIDDLE, ids=_case_id)
def test_missing_plain_middle_span_changes_no_call(case):
    fixture, dropped = case
    runs = _drop(fixture, dropped)
    assert [[_signature(c) for c in r.tool_calls] for r in runs] == [
        [_signature(c) for c in r.tool_calls] for r in _baseline(fixture)
    ]


def _ancestors(fixture: Fixture, span_id: str) -> set[str]:
    by_id = {s.span_id: s for s in _records(fixture)[0]}
    out: set[str] = set()
    current = by_id.get(span_id)
    while current is not None and current.span_id not in out:
        out.add(current.span_id)
        current = by_id.get(current.parent_span_id or "")
    return out


@pytest.mark.parametrize("case", RUN_MIDDLE, ids=_case_id)
def test_missing_run_span_loses_no_call_and_attributes_it_to_an_enclosing_run(case):
    fixture, dropped = case
    runs = _drop(fixture, dropped)
    before = {c.span_id: c for r in _baseline(fixture) for c in r.tool_calls}
    after = {c.span_id: (c, r) for r in runs for c in r.tool_calls}
    assert after.keys() == before.keys()
    by_id = {s.span_id: s for s in _records(fixture)[0]}
    # an async wrapper can end before the work it started (Mastra's agent.generate): then no span encloses the
    # dropped run's children in time, and nothing but the lost span tied them to it
    enclosed = any(
        by_id[a].end_ns >= dropped.end_ns for a in _ancestors(fixture, dropped.span_id) - {dropped.span_id}
    )
    for span_id, (call, run) in after.items():
        assert _signature(call) == _signature(before[span_id])
        if enclosed:
            assert run.span_id in _ancestors(fixture, span_id), "a call must belong to a run that encloses it"


@pytest.mark.parametrize("case", TOOL_MIDDLE, ids=_case_id)
def test_missing_tool_span_loses_at_most_that_call(case):
    fixture, dropped = case
    runs = _drop(fixture, dropped)
    before = [c for r in _baseline(fixture) for c in r.tool_calls]
    lost = next(c for c in before if c.span_id == dropped.span_id)
    after = [c for r in runs for c in r.tool_calls]
    assert {_signature(c) for c in before if c is not lost} <= {_signature(c) for c in after}
    recovered = [c for c in after if c.call_id == lost.call_id and c.name == lost.name]
    if _other_tool_span_of(fixture, dropped):  # a second instrumentation's span of the same call remains
        assert len(recovered) == 1
    elif lost.call_id and _request_and_result_recorded(fixture, lost.call_id):  # they prove it ran
        assert len(recovered) == 1 and recovered[0].sources["name"].startswith("request:")
    else:  # nothing else records it: it is lost, and nothing is invented in its place
        assert recovered == []


def _other_tool_span_of(fixture: Fixture, dropped: SpanRecord) -> bool:
    """Whether another tool span is nested in the dropped one or holds it (the same call recorded twice)."""
    spans = _records(fixture)[0]
    return any(
        classify(s).tool is not None
        and s.span_id != dropped.span_id
        and (s.parent_span_id == dropped.span_id or dropped.parent_span_id == s.span_id)
        for s in spans
    )


def _request_and_result_recorded(fixture: Fixture, call_id: str) -> bool:
    """Whether the model's request for this call and its result fed back to the model were both recorded."""
    from agentotel_eval.reconstruct.context import TraceContext
    from agentotel_eval.reconstruct.spans import roles_of
    from agentotel_eval.reconstruct.tree import build_trees

    spans, logs = _records(fixture)
    requested = answered = False
    for tree in build_trees(spans, logs):
        ctx = TraceContext(tree, roles_of(tree.spans))
        for span_id, role in ctx.roles.items():
            if role.llm:
                span = tree.spans[span_id]
                requested |= any(r.call_id == call_id for r in ctx.output(span).requests)
                answered |= any(p.call_id == call_id for m in ctx.input(span) for p in m.tool_results)
    return requested and answered


def test_shuffling_within_one_timestamp_is_still_deterministic():
    """Sibling spans with the same start time are ordered by span id, not by arrival."""
    spans = list(_records(BY_NAME["google-adk__default__parallel"])[0])
    same_start = [SpanRecord(**{**_fields(s), "start_ns": spans[0].start_ns}) for s in spans]
    first = reconstruct(same_start)
    for seed in range(5):
        random.Random(seed).shuffle(same_start)
        assert reconstruct(same_start) == first


def _fields(span: SpanRecord) -> dict:
    return {f: getattr(span, f) for f in span.__dataclass_fields__}
