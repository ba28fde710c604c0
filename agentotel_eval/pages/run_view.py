"""One run: input and output, expected against called tools as an aligned timeline, its trajectory spec
against its calls, each call with the evidence it was rebuilt from, every evaluation, and the trace's span
tree. What each part shows is decided here; ``templates/run_body.html`` lays it out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from agentotel_eval.access.queries import RunDetail, agent_shown
from agentotel_eval.detectors.registry import BY_NAME, RULES
from agentotel_eval.metrics.alignment import EXTRA, MATCHED, MISSING, OUT_OF_ORDER, Alignment, Column, align
from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS, TRAJECTORY, MetricLabel, metric_label
from agentotel_eval.pages.markup import Links, Readable, fmt_duration_ns, fmt_score, or_blank, readable
from agentotel_eval.pages.timeline import CALLED, Timeline, timeline
from agentotel_eval.pages.trajectory_view import TrajectoryView, trajectory_view


class AlignmentView(NamedTuple):
    has_expected: bool  # False: the called tools alone, nothing to align against
    counts: dict[str, int]  # matched, missing, extra, out_of_order
    source: str  # where the expected tools came from, in words
    timeline: Timeline


class Evidence(NamedTuple):
    sources: list[tuple[str, str]]  # (how, the fields read so)
    execution_span: str | None
    request_span: str | None
    discarded: list[tuple[str, str, str]]  # (field, source, why)

    def __bool__(self) -> bool:
        """Whether anything was recorded (a run stored before diagnostics existed has nothing)."""
        return bool(self.sources or self.execution_span or self.request_span or self.discarded)


class CallView(NamedTuple):
    number: int  # from 1
    tool: str
    status: str
    start: datetime | str | None
    call_id: str | None
    error: str | None
    arguments: Readable | None
    result: Readable | None
    evidence: Evidence


class EvaluationRow(NamedTuple):
    metric: str
    label: MetricLabel  # its name for people, direction and meaning
    model: str | None  # the judge's model; None: a deterministic metric
    cost: str
    score: str
    threshold: str  # with the side of it that passes: "≥ 0.50", "< 0.70"
    result: str  # pass | fail | the status of an evaluation that did not score
    reason: str
    findings: (
        list[tuple[Any, Any, str]] | None
    )  # the errors: (type/subtype, description, what the rule finds)
    source: str
    unchecked: list[str]  # what the detectors could not check for lack of recorded data
    observed: list[str]  # low-severity observations (a result nothing used): shown, never scored


class SpanRow(NamedTuple):
    span_id: str
    name: str
    scope: str
    depth: int
    kind: str  # what the span does, as the conventions say it (LLM, tool, chat, ...), else its OTLP kind
    kind_title: str  # where ``kind`` was read
    duration: str
    left: str  # the bar, in percent of the trace's time ("12.50")
    width: str
    error: bool
    current: bool  # the run's own span
    run: str | None  # the agent of another run of the trace that this span is
    href: str  # that run's page, "" when it is not in the document


class Diagnostics(NamedTuple):
    frameworks: str
    unexecuted: list[tuple[Any, Any]]  # (tool, LLM span): requested, never executed
    unrequested: list[Any]  # spans executed without a request
    not_recorded: Any
    ignored: list[tuple[Any, Any, Any]]  # (span, name, why)

    def __bool__(self) -> bool:
        """Whether reconstruction noted anything."""
        return bool(
            self.frameworks or self.unexecuted or self.unrequested or self.not_recorded or self.ignored
        )


class Badge(NamedTuple):
    """The run's verdict beside its name: ``text``, a chip ``kind`` (pass | fail) and the
    ``title`` that says why."""

    text: str
    kind: str
    title: str


def run_badge(status: str, evaluations: Sequence[EvaluationRow], calls: Sequence[CallView]) -> Badge:
    """The span's error first; then what the detectors found (a failed tool whose answer claimed success has
    an ``ok`` span); then a failed call; then any other evaluation the run failed; else ok,
    saying what was checked."""
    if status == "error":
        return Badge("error", "fail", "the run's span status is ERROR")
    detectors = next((e for e in evaluations if e.metric == TOOL_ERRORS_DETECTORS.name), None)
    if detectors is not None and detectors.result == "fail":
        kinds = sorted({str(kind).split("/")[0] for kind, _d, _r in detectors.findings or ()})
        return Badge(
            "tool-use error" + (f": {', '.join(kinds)}" if kinds else ""),
            "fail",
            f"the span status is ok, but the detectors found: {detectors.reason}",
        )
    failed = [c for c in calls if c.status == "error"]
    if failed:
        return Badge(
            f"{len(failed)} failed tool call{'s' if len(failed) > 1 else ''}",
            "fail",
            "the span status is ok, but "
            + ", ".join(f"call {c.number} ({c.tool})" for c in failed)
            + " failed",
        )
    failing = [e for e in evaluations if e.result == "fail"]
    if failing:
        return Badge(
            "fails " + ", ".join(e.label.label for e in failing),
            "fail",
            "the span status is ok, but " + "; ".join(f"{e.label.label}: {e.reason}" for e in failing),
        )
    checked = " and the detectors found no tool-use error" if detectors is not None else ""
    passed = [
        e.label.label for e in evaluations if e.result == "pass" and e.metric != TOOL_ERRORS_DETECTORS.name
    ]
    checked += f"; it passes {', '.join(passed)}" if passed else ""
    return Badge("ok", "pass", f"the run's span status is ok{checked}")


@dataclass(frozen=True, slots=True)
class RunView:
    run: dict[str, Any]  # the agent_runs row
    agent: str
    status: str
    parent: tuple[str, str] | None  # (href, agent) of the run this one is nested in
    input: Readable | None
    output: Readable | None
    alignment: AlignmentView
    trajectory: TrajectoryView | None  # the run's trajectory spec against its calls, when it has one
    evaluations: list[EvaluationRow]
    legend: list[MetricLabel]  # the evaluations' metrics, each once
    calls: list[CallView]
    diagnostics: Diagnostics
    spans: list[SpanRow]
    spans_truncated: bool
    badge: Badge


def _alignment(detail: RunDetail) -> AlignmentView:
    called = list(detail.run.get("tools_called") or [])
    failed = [c.get("status") == "error" for c in detail.calls]
    if detail.expected is None:
        alone = Alignment((), tuple(called), tuple(Column(CALLED, None, j) for j in range(len(called))))
        return AlignmentView(False, {}, "", timeline(alone, failed))
    alignment = align(detail.expected, called)
    counts = {k: alignment.count(k) for k in (MATCHED, MISSING, EXTRA, OUT_OF_ORDER)}
    return AlignmentView(True, counts, _source_label(detail.expected_source), timeline(alignment, failed))


def _source_label(source: str) -> str:
    """Where the expectation came from, in words (the scorer records span_attribute, rule:NAME,
    dataset:FILE:LINE)."""
    if source == "span_attribute":
        return "the run's span"
    kind, _, rest = source.partition(":")
    if kind == "rule":
        return f"the expectation rule {rest!r}"
    if kind == "dataset":
        return f"the dataset {rest}"
    return source


def _evidence(call: dict[str, Any], diagnostics: dict[str, Any] | None) -> Evidence:
    by_source: dict[str, list[str]] = {}
    for field, how in sorted((call.get("sources") or {}).items()):
        if how:
            by_source.setdefault(str(how), []).append(str(field))
    entries = (diagnostics or {}).get("calls") or []
    seq = int(call.get("seq") or 0)
    entry = entries[seq] if seq < len(entries) else {}
    discarded = []
    for item in entry.get("discarded") or ():
        field, _, rest = str(item).partition(":")
        source, _, why = rest.partition(":")
        discarded.append((field, source, why))
    return Evidence(
        [(how, ", ".join(fields)) for how, fields in by_source.items()],
        entry.get("execution_span") or None,
        entry.get("request_span") or None,
        discarded,
    )


def _calls(detail: RunDetail) -> list[CallView]:
    diagnostics = detail.run.get("diagnostics")
    return [
        CallView(
            int(call.get("seq") or 0) + 1,
            call.get("tool_name") or "",
            call.get("status") or "ok",
            call.get("start_time"),
            call.get("call_id") or None,
            call.get("error") or None,
            readable(call.get("arguments")),
            readable(call.get("result")),
            _evidence(call, diagnostics),
        )
        for call in detail.calls
    ]


def _evaluations(detail: RunDetail) -> list[EvaluationRow]:
    rows = []
    for e in detail.evaluations:
        details: dict[str, Any] = e["details"] if isinstance(e.get("details"), dict) else {}
        errors = details.get("errors") or []
        found = details.get("detectors") if e["metric"] == TOOL_ERRORS_DETECTORS.name else None
        findings = (
            _findings(found)
            if found
            else (
                [
                    (or_blank(x.get("type")), or_blank(x.get("description")), "")
                    for x in errors
                    if isinstance(x, dict)
                ]
                if errors
                else None
            )
        )
        unchecked = [str(note) for note in details.get("could_not_run") or () if note]
        observed = [
            str(x.get("description")) for x in details.get("informational") or () if isinstance(x, dict)
        ]
        label = metric_label(e["metric"])
        rows.append(
            EvaluationRow(
                e["metric"],
                label,
                e.get("model") or None,
                f"${float(e['cost_usd']):.5f}" if e.get("cost_usd") else "",
                fmt_score(e.get("score")),
                _threshold(label, e.get("threshold")),
                ("pass" if e.get("success") else "fail")
                if e.get("status") == "ok"
                else e.get("status") or "",
                or_blank(e.get("reason")),
                findings,
                or_blank(e.get("source")),
                unchecked,
                observed,
            )
        )
    return rows


def _findings(found: list[Any]) -> list[tuple[Any, Any, str]]:
    """The detectors' findings: type/subtype, the description (with the confidence of one the rule is not sure
    of) and, as a hint, what the rule that found it looks for."""
    out = []
    for x in found:
        if not isinstance(x, dict):
            continue
        kind = "/".join(filter(None, (x.get("type"), x.get("subtype"))))
        description = str(x.get("description") or "")
        if x.get("uncertain"):
            description += f" (not sure: confidence {x.get('confidence')})"
        rule = BY_NAME.get(str(x.get("rule") or "")) or next(
            (r for r in RULES if x.get("subtype") in r.subtypes and r.type == x.get("type")), None
        )
        out.append((or_blank(kind), or_blank(description), rule.summary if rule is not None else ""))
    return out


def _threshold(label: MetricLabel, threshold: Any) -> str:
    """The threshold with the side of it that passes: a score at or above it, or (lower is better) below it;
    for the detectors, whose verdict is found or not, what passes in words."""
    if label.name == TOOL_ERRORS_DETECTORS.name:
        return "no error found"
    if threshold is None or label.higher_is_better is None:
        return fmt_score(threshold)
    return ("≥ " if label.higher_is_better else "< ") + fmt_score(threshold)


#: OpenInference's span kinds (``openinference.span.kind``), as the span tree shows them
_OPENINFERENCE_KINDS = {
    "LLM": "LLM",
    "TOOL": "tool",
    "CHAIN": "chain",
    "AGENT": "agent",
    "RETRIEVER": "retriever",
    "EMBEDDING": "embedding",
    "RERANKER": "reranker",
    "GUARDRAIL": "guardrail",
    "EVALUATOR": "evaluator",
    "PROMPT": "prompt",
}


def span_kind(span: dict[str, Any]) -> tuple[str, str]:
    """What a span does, and where that was read: OpenInference's ``openinference.span.kind`` (its spans are
    all OTLP "internal"), else GenAI's ``gen_ai.operation.name``, else the OTLP kind. The two attributes are
    read from the span row's ``openinference_span_kind`` and ``gen_ai_operation_name``, when it has them."""
    otlp = (span.get("kind") or "").lower()
    openinference = str(span.get("openinference_span_kind") or "").strip()
    if openinference:
        shown = _OPENINFERENCE_KINDS.get(openinference.upper(), openinference.lower())
        return shown, f"openinference.span.kind = {openinference} (OTLP kind: {otlp or '-'})"
    operation = str(span.get("gen_ai_operation_name") or "").strip()
    if operation:
        return operation, f"gen_ai.operation.name = {operation} (OTLP kind: {otlp or '-'})"
    return otlp, "OTLP span kind"


def _span_rows(detail: RunDetail, links: Links) -> list[SpanRow]:
    spans = detail.spans
    if not spans:
        return []
    ids = {s["span_id"] for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for s in spans:
        parent = s["parent_span_id"] if s["parent_span_id"] in ids else None
        children.setdefault(parent, []).append(s)
    t0 = min(int(s["start_time_unix_nano"] or 0) for s in spans)
    total = max(max(int(s["end_time_unix_nano"] or 0) for s in spans) - t0, 1)
    run_span = detail.run["span_id"]
    rows: list[SpanRow] = []
    stack: list[tuple[dict[str, Any], int]] = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        span_id = span["span_id"]
        start, end = int(span["start_time_unix_nano"] or t0), int(span["end_time_unix_nano"] or t0)
        other = detail.trace_runs.get(span_id) if span_id != run_span else None
        href = (
            links.run(detail.run["trace_id"], span_id) if other is not None and links.run is not None else ""
        )
        kind, kind_title = span_kind(span)
        rows.append(
            SpanRow(
                span_id,
                span["name"],
                span.get("scope_name") or "",
                min(depth, 16),
                kind,
                kind_title,
                fmt_duration_ns(start, end),
                f"{100 * (start - t0) / total:.2f}",
                f"{max(100 * (end - start) / total, 0.4):.2f}",
                span.get("status_code") == "ERROR",
                span_id == run_span,
                other,
                href,
            )
        )
        stack.extend((c, depth + 1) for c in reversed(children.get(span_id, [])))
    return rows


def _diagnostics(run: dict[str, Any]) -> Diagnostics:
    d = run.get("diagnostics") or {}
    return Diagnostics(
        ", ".join(d.get("frameworks") or ()),
        [
            (or_blank(r.get("name")), or_blank(r.get("llm_span")))
            for r in d.get("requests_without_execution") or ()
        ],
        [or_blank(span) for span in d.get("executions_without_request") or ()],
        d.get("calls_not_recorded"),
        [
            (or_blank(e.get("span_id")), or_blank(e.get("name")), or_blank(e.get("why")))
            for e in d.get("ignored") or ()
        ],
    )


def run_view(detail: RunDetail, links: Links) -> RunView:
    run = detail.run
    parent = None
    if run.get("parent_run_span_id") and links.run is not None:
        parent_span = run["parent_run_span_id"]
        parent = (links.run(run["trace_id"], parent_span), detail.trace_runs.get(parent_span, parent_span))
    evaluations = _evaluations(detail)
    calls = _calls(detail)
    status = run.get("status") or "ok"
    return RunView(
        run,
        agent_shown(run),
        status,
        parent,
        readable(run.get("input")),
        readable(run.get("output")),
        _alignment(detail),
        trajectory_view(next((e for e in detail.evaluations if e.get("metric") == TRAJECTORY.name), None)),
        evaluations,
        list({e.metric: e.label for e in evaluations}.values()),
        calls,
        _diagnostics(run),
        _span_rows(detail, links),
        detail.spans_truncated,
        run_badge(status, evaluations, calls),
    )
