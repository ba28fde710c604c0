"""Results a later trace feeds back for the calls of an earlier one (a plain client loop with no application
span: each LLM call its own trace), in the assembler and on their own."""

from __future__ import annotations

import functools
import json

import pytest

from agentotel_eval.collector.assemble import later_results
from agentotel_eval.collector.assemble.later_results import LaterResults
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.declared import BUILTIN
from tests.support.fixture_traces import fixtures
from tests.unit.collector.assemble.test_assembler import commit, make


def _completion(
    trace: int, turn: int, prompt: list[dict], calls: list[tuple[str, dict, str]], text: str = ""
) -> SpanRecord:
    """One OpenInference ChatCompletion span, the root of its own trace."""
    attrs: dict = {"openinference.span.kind": "LLM", "llm.system": "openai"}
    for i, m in enumerate(prompt):
        base = f"llm.input_messages.{i}.message"
        attrs[f"{base}.role"] = m["role"]
        if m.get("content"):
            attrs[f"{base}.content"] = m["content"]
        if m.get("tool_call_id"):
            attrs[f"{base}.tool_call_id"] = m["tool_call_id"]
        for j, (name, args, call_id) in enumerate(m.get("calls", ())):
            attrs |= {
                f"{base}.tool_calls.{j}.tool_call.id": call_id,
                f"{base}.tool_calls.{j}.tool_call.function.name": name,
                f"{base}.tool_calls.{j}.tool_call.function.arguments": json.dumps(args),
            }
    out = "llm.output_messages.0.message"
    attrs[f"{out}.role"] = "assistant"
    for j, (name, args, call_id) in enumerate(calls):
        attrs |= {
            f"{out}.tool_calls.{j}.tool_call.id": call_id,
            f"{out}.tool_calls.{j}.tool_call.function.name": name,
            f"{out}.tool_calls.{j}.tool_call.function.arguments": json.dumps(args),
        }
    if text:
        attrs[f"{out}.content"] = text
    start = 1_000 + 100 * turn
    return SpanRecord(
        f"{trace:032x}", f"{trace:016x}", None, "ChatCompletion", 3, start, start + 50, attributes=attrs
    )


def _loop(
    tool: str,
    failure: str,
    first_trace: int = 1,
    ids: str = "",
    request: str = "Weather in Atlantis, else Athens?",
) -> list[SpanRecord]:
    """Three traces: the model asks for ``tool`` (it fails with ``failure`` fed back), then
    again, then answers."""
    prompt = [{"role": "user", "content": request}]
    first = [(tool, {"city": "Atlantis"}, f"{ids or f'k{first_trace}'}-1")]
    second = [(tool, {"city": "Athens"}, f"{ids or f'k{first_trace}'}-2")]
    t1 = _completion(first_trace, 0, prompt, first)
    prompt2 = [
        *prompt,
        {"role": "assistant", "calls": first},
        {"role": "tool", "tool_call_id": first[0][2], "content": failure},
    ]
    t2 = _completion(first_trace + 1, 1, prompt2, second)
    prompt3 = [
        *prompt2,
        {"role": "assistant", "calls": second},
        {"role": "tool", "tool_call_id": second[0][2], "content": "29C"},
    ]
    t3 = _completion(first_trace + 2, 2, prompt3, [], text="Athens is 29C.")
    return [t1, t2, t3]


def _send(assembler, clock, spans) -> None:
    """Commit these spans, and let the grace period pass: their traces complete."""
    commit(assembler, spans)
    assembler.step()
    clock.now += 1.0
    assembler.step()


def _stored_calls(recorder):
    """The calls as the last write of each trace leaves them."""
    last = {t.trace_id: t for t in recorder.traces}
    return sorted(
        (
            (c.input_parameters["city"], c.status, c.output)
            for t in last.values()
            for r in t.runs
            for c in r.tool_calls
        ),
        key=lambda c: c[0],
        reverse=True,
    )


@pytest.mark.parametrize(
    ("tool", "failure"),
    [
        ("get_weather", "Error: Unknown city: Atlantis"),
        ("lookup-forecast", "Exception: the service said 404"),
        ("weather", "Error executing tool weather: no such city"),
    ],
)
def test_a_later_trace_gives_an_earlier_call_its_failure(tool, failure):
    assembler, recorder, clock = make()
    t1, t2, t3 = _loop(tool, failure)
    _send(assembler, clock, [t1])  # the first trace completes alone: its call has no result yet
    (first,) = recorder.traces
    assert [(c.status, c.sources["status"]) for r in first.runs for c in r.tool_calls] == [("ok", "default")]
    _send(assembler, clock, [t2])
    _send(assembler, clock, [t3])
    rebuilt = [t for t in recorder.traces if t.trace_id == t1.trace_id][1:]
    assert [t.replace for t in rebuilt] == [True]  # written again: its rows are replaced
    assert _stored_calls(recorder) == [("Atlantis", "error", failure), ("Athens", "ok", "29C")]
    (call,) = rebuilt[0].runs[0].tool_calls
    assert call.sources["status"] == "result_text" and call.error == failure
    assert (
        assembler.stats.traces_completed_later == 2
    )  # the second trace's call got its result from the third


def test_traces_completed_together_are_rebuilt_in_place():
    assembler, recorder, clock = make()
    _send(assembler, clock, _loop("get_weather", "Error: no"))
    assert len(recorder.traces) == 3 and not any(t.replace for t in recorder.traces)  # nothing written twice
    assert _stored_calls(recorder) == [("Atlantis", "error", "Error: no"), ("Athens", "ok", "29C")]


def test_the_text_signal_off_leaves_the_status_to_recorded_flags():
    assembler, recorder, clock = make()
    assembler._later = LaterResults(functools.partial(reconstruct, text_failures=False), BUILTIN)
    _send(assembler, clock, _loop("get_weather", "Error: no"))
    assert _stored_calls(recorder) == [("Atlantis", "ok", "Error: no"), ("Athens", "ok", "29C")]


def test_the_recorded_loop_whose_failure_only_the_model_saw():
    (fx,) = [f for f in fixtures() if f.name == "raw-openai__openinference__error"]
    by_trace: dict[str, list[SpanRecord]] = {}
    for s in sorted(fx.spans(), key=lambda s: s.start_ns):
        by_trace.setdefault(s.trace_id, []).append(s)
    assembler, recorder, clock = make()
    for spans in by_trace.values():
        _send(assembler, clock, spans)
    calls = {
        c.call_id: c for t in recorder.traces for r in t.runs for c in r.tool_calls
    }  # the last write wins
    assert [(c.name, c.input_parameters, c.status) for c in calls.values()] == [
        ("get_weather", {"city": "Atlantis"}, "error"),
        ("get_weather", {"city": "Athens"}, "ok"),
    ]


def test_a_trace_completed_again_keeps_what_later_traces_fed_back():
    later = LaterResults(reconstruct, BUILTIN)
    t1, t2, _ = _loop("get_weather", "Error: no")
    first = _completed(t1)
    assert later.complete(first) == []
    (redone,) = later.complete(_completed(t2))
    assert redone.runs[0].tool_calls[0].status == "error"
    # a late span re-opens the first trace: rebuilt alone it would say ok again
    (again,) = later.complete(_completed(t1))
    assert again.runs[0].tool_calls[0].status == "error"


def test_call_ids_of_another_conversation_give_nothing():
    """Call ids are not unique everywhere (some frameworks number them per run): another conversation's trace
    that feeds back a result under the same id (another request, another service, another
    tool) gives nothing."""
    later = LaterResults(reconstruct, BUILTIN)
    asking, _, _ = _loop("get_weather", "Error: no", first_trace=1, ids="call_0")
    assert later.complete(_completed(asking)) == []
    _, other_request, _ = _loop(
        "get_weather", "Error: no", first_trace=11, ids="call_0", request="Weather in Oslo?"
    )
    assert later.complete(_completed(other_request)) == []
    _, other_tool, _ = _loop("get_time", "Error: no", first_trace=21, ids="call_0")
    assert later.complete(_completed(other_tool)) == []
    _, other_service, _ = _loop("get_weather", "Error: no", first_trace=31, ids="call_0")
    other_service.resource["service.name"] = "billing"
    assert later.complete(_completed(other_service)) == []
    _, same, _ = _loop("get_weather", "Error: no", first_trace=41, ids="call_0")
    (redone,) = later.complete(_completed(same))
    assert redone.trace_id == asking.trace_id and redone.runs[0].tool_calls[0].status == "error"


def test_waiting_traces_are_bounded(monkeypatch):
    monkeypatch.setattr(later_results, "MAX_WAITING_TRACES", 2)
    later = LaterResults(reconstruct, BUILTIN)
    loops = [_loop("get_weather", "Error: no", first_trace=10 * k + 1) for k in range(3)]
    for t1, _, _ in loops:
        later.complete(_completed(t1))
    assert later.complete(_completed(loops[0][1])) == []  # the oldest was let go: nothing to rebuild
    assert len(later.complete(_completed(loops[2][1]))) == 1


def _completed(span: SpanRecord):
    from agentotel_eval.collector.process.completed import CompletedTrace

    return CompletedTrace(
        span.trace_id,
        (span,),
        (),
        tuple(reconstruct([span])),
        "quiet",
        True,
        False,
        span.start_ns,
        span.end_ns,
    )


@pytest.mark.parametrize("fx", [f for f in fixtures() if f.entry["trace_count"] > 1], ids=lambda f: f.name)
def test_traces_completed_one_by_one_give_what_reconstruct_gives_them_together(fx):
    """Every recorded fixture of several traces, completed trace by trace in start order (as the assembler
    sees them): the last write of each trace equals ``reconstruct`` over all of them (results
    completed by call id)."""
    from agentotel_eval.collector.process.completed import CompletedTrace

    spans, logs = fx.spans(), fx.logs()
    later = LaterResults(reconstruct, BUILTIN)
    written: dict[str, tuple] = {}
    traces = []
    for trace_id in {s.trace_id for s in spans}:
        mine = sorted((s for s in spans if s.trace_id == trace_id), key=lambda s: s.start_ns)
        own_logs = [r for r in logs if r.trace_id == trace_id]
        traces.append(
            CompletedTrace(
                trace_id,
                tuple(mine),
                tuple(own_logs),
                tuple(reconstruct(mine, own_logs)),
                "quiet",
                True,
                False,
                mine[0].start_ns,
                max(s.end_ns for s in mine),
            )
        )
    for trace in sorted(traces, key=lambda t: (t.lo_ns, t.trace_id)):
        written[trace.trace_id] = trace.runs
        for redone in later.complete(trace):
            written[redone.trace_id] = redone.runs
    together = reconstruct(spans, logs)
    assert sorted((r for runs in written.values() for r in runs), key=lambda r: r.key) == sorted(
        together, key=lambda r: r.key
    )
