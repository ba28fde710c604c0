"""Tool-use assertions inside a test suite: capture the spans the code under test emits, in process, rebuild
its agent runs with the collector's own reconstruction, and assert on them with the collector's own metrics.

    with capture() as runs:
        travel_agent("Find a hotel in Paris and book the cheapest one")
    run = runs.one()
    assert_tool_correctness(run, ["search_hotels", "book_hotel"], exact=True, ordering=True)

``capture()`` adds an in-memory exporter to the application's SDK TracerProvider (the global one, and the one
``configure()`` was given) and takes it away afterwards; when there is none it installs a provider for the
capture and removes it afterwards. It never replaces an application's provider. The pytest plugin
(``agentotel_eval.tracing.pytest_plugin``) offers all of this as the ``agentotel`` fixture.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.tracing import state
from agentotel_eval.tracing.setup import ExporterSlot

__all__ = [
    "CapturedRuns",
    "ToolUseAssertion",
    "assert_no_tool_errors",
    "assert_tool_correctness",
    "assert_trajectory",
    "capture",
    "runs_from_spans",
]

#: one capture slot per provider: SDK providers cannot drop a processor, so each gets one and captures swap in
_slots: weakref.WeakKeyDictionary[Any, ExporterSlot] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class _Collect(SpanProcessor):
    """Keeps every span that ends while it is attached."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.spans.append(span)

    def taken(self) -> list[ReadableSpan]:
        with self._lock:
            return list(self.spans)


def runs_from_spans(spans: Sequence[ReadableSpan]) -> list[AgentRun]:
    """Agent runs rebuilt from SDK spans exactly as the collector rebuilds them from OTLP: the spans are
    encoded as an OTLP export request and decoded by the collector's decoder first."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from agentotel_eval.otlp.decode import decode
    from agentotel_eval.reconstruct import reconstruct

    if not spans:
        return []
    body = encode_spans(spans).SerializeToString()
    return reconstruct(decode("traces", "protobuf", body).records)


class CapturedRuns(Sequence[AgentRun]):
    """The agent runs a capture saw, in start order; filled when the ``with`` block ends."""

    def __init__(self, runs: Sequence[AgentRun] = (), spans: Sequence[ReadableSpan] = ()) -> None:
        self._runs = list(runs)
        self.spans: list[ReadableSpan] = list(spans)

    def __getitem__(self, index: Any) -> Any:
        return self._runs[index]

    def __len__(self) -> int:
        return len(self._runs)

    def __iter__(self) -> Iterator[AgentRun]:
        return iter(self._runs)

    def __repr__(self) -> str:
        return f"CapturedRuns({', '.join(_describe(r) for r in self._runs)})"

    def _fill(self, runs: Sequence[AgentRun], spans: Sequence[ReadableSpan]) -> None:
        self._runs = list(runs)
        self.spans = list(spans)

    def one(self) -> AgentRun:
        """The single run; an ``AssertionError`` that lists what was captured when there
        are none or several."""
        __tracebackhide__ = True
        if len(self._runs) == 1:
            return self._runs[0]
        if not self._runs:
            names = sorted({s.name for s in self.spans})
            seen = f"{len(self.spans)} span(s): {', '.join(names[:12])}" if self.spans else "no span at all"
            raise AssertionError(
                f"expected one agent run, captured none ({seen}). Is the agent traced (@traced(kind='agent') "
                "or its framework's instrumentation on), and did it run inside capture()?"
            )
        listed = "\n".join(f"  - {_describe(r)}" for r in self._runs)
        raise AssertionError(
            f"expected one agent run, captured {len(self._runs)}:\n{listed}\n"
            "pick one with runs.by_agent(name), or index the runs"
        )

    def by_agent(self, name: str) -> CapturedRuns:
        """The runs of the agent called ``name`` (nested runs included)."""
        return CapturedRuns([r for r in self._runs if r.agent_name == name], self.spans)

    def top_level(self) -> CapturedRuns:
        """The runs not nested in another run (an agent called as a tool, a handoff target)."""
        return CapturedRuns([r for r in self._runs if r.parent_run_span_id is None], self.spans)


def _describe(run: AgentRun) -> str:
    nested = ", nested" if run.parent_run_span_id else ""
    return (
        f"{run.agent_name or run.span_name or '?'} ({run.trace_id[:8]}/{run.span_id}{nested}): "
        f"{run.tools_called}"
    )


def _providers() -> list[Any]:
    """The application's SDK providers: the global one, and the one ``configure()`` was given."""
    found: list[Any] = []
    for provider in (trace.get_tracer_provider(), state.default_provider):
        if (
            provider is not None
            and callable(getattr(provider, "add_span_processor", None))
            and all(provider is not p for p in found)
        ):
            found.append(provider)
    return found


def _install_global(provider: TracerProvider) -> None:
    trace.set_tracer_provider(provider)


def _uninstall_global(provider: TracerProvider) -> None:
    """Take our provider away again so the application can install its own later. The API offers no way to
    unset the global provider; OpenTelemetry's own test helpers reset these two module
    globals the same way."""
    if trace.get_tracer_provider() is provider:
        trace._TRACER_PROVIDER = None
        trace._TRACER_PROVIDER_SET_ONCE._done = False


@contextmanager
def capture() -> Iterator[CapturedRuns]:
    """Collect the spans that end inside the block and rebuild their agent runs when it ends."""
    collect = _Collect()
    installed: TracerProvider | None = None
    with _lock:
        providers = _providers()
        if not providers:
            installed = TracerProvider()
            _install_global(installed)
            providers = _providers()
        slots = []
        for provider in providers:
            slot = _slots.get(provider)
            if slot is None:
                slot = _slots[provider] = ExporterSlot()
                provider.add_span_processor(slot)
            if slot.delegate is not None:
                raise RuntimeError("capture() is already active on this TracerProvider; captures do not nest")
            slot.replace(collect)
            slots.append(slot)
    runs = CapturedRuns()
    try:
        yield runs
    finally:
        with _lock:
            for slot in slots:
                slot.replace(None)
            if installed is not None:
                _uninstall_global(installed)
                installed.shutdown()
        spans = collect.taken()
        runs._fill(runs_from_spans(spans), spans)


# ---- assertions --------------------------------------------------------------------------------------------


class ToolUseAssertion:
    """What one assertion found, for the results file: the run, the metric and its outcome."""

    def __init__(self, run: AgentRun, metric: str, score: float | None, success: bool, reason: str) -> None:
        self.run, self.metric, self.score, self.success, self.reason = run, metric, score, success, reason


#: called with every assertion's outcome (the pytest plugin records them for ``--agentotel-results``)
listeners: list[Callable[[ToolUseAssertion], None]] = []


def _report(outcome: ToolUseAssertion) -> None:
    for listener in list(listeners):
        listener(outcome)


def assert_tool_correctness(
    run: AgentRun,
    expected: Sequence[Any],
    *,
    exact: bool = False,
    ordering: bool = False,
    threshold: float | None = None,
    params: Sequence[str] = (),
) -> float:
    """Score ``run`` with ``ToolCorrectnessMetric`` against ``expected`` (tool names or ``ToolCall``s) and
    fail with the expected and called tools lined up, missing, extra and out-of-order calls marked, and the
    metric's reason. ``threshold`` defaults to 1.0 (every expected call, as asked); ``params``:
    ``input_parameters`` and/or ``output`` to compare arguments and results too (give ``ToolCall``s with them
    then). Returns the score."""
    __tracebackhide__ = True
    from agentotel_eval.metrics.alignment import alignment_text
    from agentotel_eval.metrics.registry import tool_correctness

    metric = tool_correctness(exact, ordering).build(
        1.0 if threshold is None else threshold, evaluation_params=list(params)
    )
    result = metric.measure(run.to_test_case(expected_tools=list(expected)))
    success = bool(result.success)
    _report(ToolUseAssertion(run, result.metric, result.score, success, result.reason))
    if not success:
        names = [getattr(e, "name", e) for e in expected]
        score = "-" if result.score is None else f"{result.score:.2f}"
        lines = [
            f"{result.metric} of {_describe(run)}: {score} < {result.threshold:.2f}",
            *alignment_text([str(n) for n in names], run.tools_called),
            f"  {result.reason}",
        ]
        raise AssertionError("\n".join(lines))
    return float(result.score or 0.0)


def assert_trajectory(run: AgentRun, spec: Any, *, threshold: float | None = None) -> float:
    """Score ``run`` against a trajectory spec (a dict such as ``{"steps": [...], "extra": "forbid"}``, a list
    of steps, JSON text or a ``TrajectorySpec``) and fail, when the score is under the threshold or a
    violation occurred, with the spec's steps lined up against the calls: what matched, what is missing and
    the nearest call's failing argument check, the extra calls and the violations. ``threshold``: the spec's
    own, else 1.0. A spec that cannot be read raises ``SpecError``. Returns the score."""
    __tracebackhide__ = True
    from agentotel_eval.metrics.registry import TRAJECTORY
    from agentotel_eval.trajectory import parse_spec
    from agentotel_eval.trajectory.text import trajectory_lines

    read = parse_spec(spec, "spec")
    if threshold is not None and read.threshold is not None:  # the assertion's threshold over the spec's own
        read = dataclasses.replace(read, threshold=None)
    case = run.to_test_case()
    case.expected_trajectory = read
    result = TRAJECTORY.build(threshold).measure(case)
    score, success = float(result.score or 0.0), bool(result.success)
    _report(ToolUseAssertion(run, result.metric, score, success, result.reason))
    if not success:
        why = "violations" if score >= result.threshold else f"{score:.2f} < {result.threshold:.2f}"
        raise AssertionError(
            "\n".join(
                [f"{result.metric} of {_describe(run)}: {why}", *trajectory_lines(result.evaluation_log)]
            )
        )
    return score


def assert_no_tool_errors(run: AgentRun) -> None:
    """Fail when the deterministic tool-error detectors find an error in ``run`` (failed calls repeated as
    they were, calls to tools the agent does not have, arguments its schemas reject), with what they found."""
    __tracebackhide__ = True
    from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS

    result = TOOL_ERRORS_DETECTORS.build().measure(run.to_test_case())
    success = bool(result.success)
    _report(ToolUseAssertion(run, result.metric, result.score, success, result.reason))
    if not success:
        failed = [f"  {c.name}: {c.error or 'error'}" for c in run.tool_calls if c.status == "error"]
        raise AssertionError("\n".join([f"tool errors in {_describe(run)}: {result.reason}", *failed]))
