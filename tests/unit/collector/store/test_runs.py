"""The run writer: completed traces become one replace operation; a bad trace is skipped alone."""

from __future__ import annotations

from agentotel_eval.collector.process.completed import CompletedTrace
from agentotel_eval.collector.store.runs import RunWriter
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall


class Recorder:
    def __init__(self) -> None:
        self.ops = []

    def submit_operation(self, op) -> None:
        self.ops.append(op)


def completed(n: int, start: object = 1_000, replace: bool = False) -> CompletedTrace:
    run = AgentRun(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        agent_name="a",
        start_time_ns=start,  # type: ignore[arg-type]
        end_time_ns=2_000,
        tool_calls=(ToolCall("t"),),
    )
    return CompletedTrace(f"{n:032x}", (), (), (run,), "quiet", True, replace, 1_000, 2_000)


def test_a_batch_becomes_one_operation_with_the_traces_to_replace():
    writer = Recorder()
    RunWriter(writer, wall_clock=lambda: 5).consume([completed(1), completed(2, replace=True)])
    (op,) = writer.ops
    assert op.runs.num_rows == 2 and op.calls.num_rows == 2
    assert [w.trace_id for w in op.replace] == [f"{2:032x}"]


def test_a_trace_that_cannot_be_converted_is_skipped_alone():
    writer = Recorder()
    run_writer = RunWriter(writer, wall_clock=lambda: 5)
    run_writer.consume([completed(1), completed(2, start="not a time"), completed(3)])
    assert sorted(op.runs.column("trace_id")[0].as_py() for op in writer.ops) == [f"{1:032x}", f"{3:032x}"]
    assert run_writer.conversion_errors == 1


def test_nothing_to_write_submits_nothing():
    writer = Recorder()
    empty = CompletedTrace("t" * 32, (), (), (), "quiet", True, False, 0, 0)
    RunWriter(writer).consume([empty])
    assert writer.ops == []
