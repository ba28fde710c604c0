"""Scores as telemetry: metric results <-> span attributes, ``gen_ai.evaluation.result``
events, spans and logs.

Pure mappings, no I/O. The names follow the OTel GenAI evaluation event (``gen_ai.evaluation.name``,
``.score.value``, ``.score.label``, ``.explanation``, ``error.type``) and our contract's span attributes
``agentotel.eval.<metric>.score|success|reason``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanRecord
from agentotel_eval.store.rows import json_list, to_json

#: instrumentation scope of everything the collector itself emits
SCOPE_NAME = "agentotel-eval"
MAX_EXPLANATION_CHARS = 4096
#: on our own evaluation events: ``<evaluator>/<version>``, so a re-score replaces ours and never others'
EVALUATOR_ATTRIBUTE = "agentotel.eval.evaluator"


def _explanation(result: MetricResult) -> str:
    text = result.reason or (result.error or "")
    return text if len(text) <= MAX_EXPLANATION_CHARS else text[: MAX_EXPLANATION_CHARS - 1] + "…"


@functools.lru_cache(maxsize=1024)
def _score_keys(metric: str) -> tuple[str, str, str, str]:
    """The metric's ``agentotel.eval.<metric>.score|success|reason|status`` names."""
    return (
        sc.score_attribute(metric, "score"),
        sc.score_attribute(metric, "success"),
        sc.score_attribute(metric, "reason"),
        sc.score_attribute(metric, "status"),
    )


def score_attributes(results: Iterable[MetricResult]) -> dict[str, Any]:
    """The run span's ``agentotel.eval.<metric>.*`` attributes for these results (unscored ones say why)."""
    attrs: dict[str, Any] = {}
    for r in results:
        status = r.status
        if status == "pending" or status == "skipped":
            continue
        score_key, success_key, reason_key, status_key = _score_keys(r.metric)
        if r.score is not None:
            attrs[score_key] = float(r.score)
        if r.success is not None:
            attrs[success_key] = bool(r.success)
        attrs[reason_key] = _explanation(r)
        if status == "error":
            attrs[status_key] = "error"
    return attrs


def score_patch(results: Iterable[MetricResult]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7396) giving a stored run span these results' attributes: every field of each
    scored metric is set or, when it has no value now, removed (``None``), so a re-score
    leaves nothing stale."""
    patch: dict[str, Any] = {}
    for r in results:
        if r.status == "pending" or r.status == "skipped":
            continue
        patch.update(dict.fromkeys(_score_keys(r.metric)))
    patch.update(score_attributes(results))
    return patch


def scored_metrics(results: Iterable[MetricResult]) -> list[str]:
    """The metrics whose attributes and events a write-back of these results replaces."""
    return [r.metric for r in results if r.status in ("ok", "error")]


def evaluation_event_attributes(result: MetricResult) -> dict[str, Any]:
    """Attributes of one ``gen_ai.evaluation.result`` event (span event or log record)."""
    attrs: dict[str, Any] = {sc.GEN_AI_EVALUATION_NAME: result.metric}
    if result.score is not None:
        attrs[sc.GEN_AI_EVALUATION_SCORE_VALUE] = float(result.score)
    if result.label is not None:
        attrs[sc.GEN_AI_EVALUATION_SCORE_LABEL] = result.label
    explanation = _explanation(result)
    if explanation:
        attrs[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation
    if result.status == "error":
        attrs[sc.ERROR_TYPE] = (result.error or "error").split(":", 1)[0][:200]
    if result.evaluator:
        attrs[EVALUATOR_ATTRIBUTE] = f"{result.evaluator}/{result.evaluator_version}"
    return attrs


def evaluation_events(results: Iterable[MetricResult], time_ns: int) -> tuple[SpanEvent, ...]:
    """One ``gen_ai.evaluation.result`` event per scored (or failed) result."""
    return tuple(
        SpanEvent(e["name"], e["time_unix_nano"], e["attributes"]) for e in _event_dicts(results, time_ns)
    )


def _event_dicts(results: Iterable[MetricResult], time_ns: int) -> list[dict[str, Any]]:
    """``evaluation_events`` as ``spans.events`` stores them."""
    return [
        {
            "name": sc.EVENT_EVALUATION_RESULT,
            "time_unix_nano": time_ns,
            "attributes": evaluation_event_attributes(r),
        }
        for r in results
        if r.status in ("ok", "error")
    ]


def with_scores(span: SpanRecord, results: Sequence[MetricResult], time_ns: int) -> SpanRecord:
    """A copy of the run span carrying the score attributes and one evaluation event per metric.

    Scores from an earlier pass (a re-scored run) are replaced, not appended twice.
    """
    names = {r.metric for r in results}
    prefixes = tuple(f"{sc.AGENTOTEL_EVAL_PREFIX}.{name}." for name in names)
    attributes = {k: v for k, v in span.attributes.items() if not k.startswith(prefixes)}
    attributes.update(score_attributes(results))
    kept = tuple(e for e in span.events if not _replaced(e, names))
    events = kept + evaluation_events(results, time_ns)
    return SpanRecord(
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.kind,
        span.start_ns,
        span.end_ns,
        span.status_code,
        span.status_message,
        attributes,
        events,
        span.links,
        span.resource,
        span.scope_name,
        span.scope_version,
        span.trace_state,
        span.flags,
    )


def updated_span_json(
    span: SpanRecord, patch: Mapping[str, Any], new_events: list[dict[str, Any]], metrics: Sequence[str]
) -> tuple[str, str]:
    """The run span's attributes and events JSON after a write-back, computed as the SQL delta would compute
    them in the database: the merge patch applied (``None`` removes a key), our earlier events of the same
    metrics dropped (other tools' events kept), the new events appended."""
    attributes = dict(span.attributes)
    for key, value in patch.items():
        if value is None:
            attributes.pop(key, None)
        else:
            attributes[key] = value
    replaced = set(metrics)
    events = [_event_dict(e) for e in span.events if not _replaced(e, replaced)]
    events.extend(new_events)
    return to_json(attributes), json_list(events)


_SCORE_FIELDS = frozenset({"score", "success", "reason", "status"})


def scored_on(span: SpanRecord) -> set[str]:
    """The metrics whose ``agentotel.eval.<metric>.score|success|reason|status``
    attributes the span carries."""
    prefix = sc.AGENTOTEL_EVAL_PREFIX + "."
    out = set()
    for key in span.attributes:
        if key.startswith(prefix):
            metric, _, field = key[len(prefix) :].rpartition(".")
            if metric and field in _SCORE_FIELDS:
                out.add(metric)
    return out


def write_back(
    span: SpanRecord,
    results: Sequence[MetricResult],
    time_ns: int,
    whole: bool,
    cleared: Collection[str] = (),
) -> tuple[str, str, tuple[str, ...], str | None, str | None]:
    """A write-back's JSON: ``to_json(score_patch(results))``, the events it adds, the metrics it replaces
    and, with ``whole``, the span's ``updated_span_json`` (else two Nones). ``cleared``: metrics no longer
    scored, whose attributes and our events are removed."""
    patch = score_patch(results)
    for metric in cleared:
        for key in _score_keys(metric):
            patch.setdefault(key, None)
    events = _event_dicts(results, time_ns)
    metrics = tuple(dict.fromkeys([*scored_metrics(results), *cleared]))
    patch_json, events_json = to_json(patch), json_list(events)
    if not whole:
        return patch_json, events_json, metrics, None, None
    return (patch_json, events_json, metrics, *updated_span_json(span, patch, events, metrics))


def _event_dict(event: SpanEvent) -> dict[str, Any]:
    """A span event as ``spans.events`` stores it."""
    return {"name": event.name, "time_unix_nano": event.time_ns, "attributes": event.attributes}


def _replaced(event: SpanEvent, metrics: Collection[str]) -> bool:
    """An evaluation event we wrote earlier for one of ``metrics``: a re-score replaces it. (The SQL delta in
    ``collector.store.operations`` keeps the same rule.)"""
    return (
        event.name == sc.EVENT_EVALUATION_RESULT
        and _is_ours(event.attributes)
        and event.attributes.get(sc.GEN_AI_EVALUATION_NAME) in metrics
    )


def _is_ours(event_attributes: Mapping[str, Any]) -> bool:
    """Events we wrote carry our evaluator attribute; an external event with the same name is data, kept."""
    return EVALUATOR_ATTRIBUTE in event_attributes


def evaluation_span_id(trace_id: str, run_span_id: str, metric: str, version: str) -> str:
    """A stable span id for the evaluation span of (run, metric, version): re-sending it is idempotent."""
    digest = hashlib.blake2b(
        f"{trace_id}/{run_span_id}/{metric}/{version}".encode(), digest_size=8
    ).hexdigest()
    return digest if digest != "0" * 16 else "0" * 15 + "1"


def evaluation_span(run_span: SpanRecord, result: MetricResult, start_ns: int, end_ns: int) -> SpanRecord:
    """The child span ``gen_ai.evaluation <metric>`` that carries a score computed after
    the run was forwarded."""
    attributes: dict[str, Any] = {**evaluation_event_attributes(result), **score_attributes([result])}
    if result.model:
        attributes[sc.GEN_AI_REQUEST_MODEL] = result.model
    if result.cost_usd is not None:
        attributes[f"{sc.AGENTOTEL_EVAL_PREFIX}.{result.metric}.cost_usd"] = float(result.cost_usd)
    return SpanRecord(
        trace_id=run_span.trace_id,
        span_id=evaluation_span_id(
            run_span.trace_id, run_span.span_id, result.metric, result.evaluator_version
        ),
        parent_span_id=run_span.span_id,
        name=f"gen_ai.evaluation {result.metric}",
        kind=1,
        start_ns=start_ns,
        end_ns=end_ns,
        status_code=2 if result.status == "error" else 0,
        status_message=(result.error or "")[:500] if result.status == "error" else "",
        attributes=attributes,
        events=evaluation_events([result], end_ns),
        resource=run_span.resource,
        scope_name=SCOPE_NAME,
    )


def evaluation_log(
    trace_id: str,
    run_span_id: str,
    result: MetricResult,
    time_ns: int,
    resource: Mapping[str, Any] | None = None,
) -> LogRecord:
    """A ``gen_ai.evaluation.result`` log record parented to the evaluated run span."""
    return LogRecord(
        time_ns=time_ns,
        observed_time_ns=time_ns,
        trace_id=trace_id,
        span_id=run_span_id,
        severity_number=9,
        severity_text="INFO",
        event_name=sc.EVENT_EVALUATION_RESULT,
        body=None,
        attributes=evaluation_event_attributes(result),
        resource=dict(resource or {}),
        scope_name=SCOPE_NAME,
    )


@dataclass(frozen=True, slots=True)
class ExternalEvaluation:
    """A ``gen_ai.evaluation.result`` another tool sent us (as a log record or a span event)."""

    trace_id: str | None
    span_id: str | None
    name: str
    score: float | None
    label: str | None
    explanation: str | None
    error_type: str | None
    response_id: str | None
    source: str
    time_ns: int
    origin: str = "log"  # "log" (a log record) | "span_event" (an event on a span)

    @property
    def success(self) -> bool | None:
        if self.label is None:
            return None
        label = self.label.strip().lower()
        if label in ("pass", "passed", "true", "ok", "success", "correct", "yes"):
            return True
        if label in ("fail", "failed", "false", "error", "failure", "incorrect", "no"):
            return False
        return None


def _external(
    attrs: Mapping[str, Any],
    trace_id: str | None,
    span_id: str | None,
    source: str,
    time_ns: int,
    origin: str,
) -> ExternalEvaluation | None:
    name = attrs.get(sc.GEN_AI_EVALUATION_NAME)
    if not isinstance(name, str) or not name:
        return None  # the name is required by the convention; without it the record says nothing we can store
    raw_score = attrs.get(sc.GEN_AI_EVALUATION_SCORE_VALUE)
    score = (
        float(raw_score) if isinstance(raw_score, int | float) and not isinstance(raw_score, bool) else None
    )
    if score is None and isinstance(raw_score, str):
        try:
            score = float(raw_score)
        except ValueError:
            score = None
    label = attrs.get(sc.GEN_AI_EVALUATION_SCORE_LABEL)
    explanation = attrs.get(sc.GEN_AI_EVALUATION_EXPLANATION)
    error_type = attrs.get(sc.ERROR_TYPE)
    response_id = attrs.get(sc.GEN_AI_RESPONSE_ID)
    return ExternalEvaluation(
        trace_id,
        span_id,
        name,
        score,
        str(label) if label is not None else None,
        str(explanation) if explanation is not None else None,
        str(error_type) if error_type is not None else None,
        str(response_id) if response_id is not None else None,
        source,
        time_ns,
        origin,
    )


def _source(scope_name: str, resource: Mapping[str, Any]) -> str:
    service = resource.get("service.name")
    parts = [p for p in (scope_name, service if isinstance(service, str) else None) if p]
    return "external:" + ("/".join(parts) if parts else "unknown")


def external_evaluations(
    spans: Iterable[SpanRecord] = (), logs: Iterable[LogRecord] = ()
) -> list[ExternalEvaluation]:
    """Evaluation results carried in incoming telemetry, except the ones this collector emitted itself."""
    found: list[ExternalEvaluation] = []
    for log in logs:
        if log.event_name != sc.EVENT_EVALUATION_RESULT or log.scope_name == SCOPE_NAME:
            continue
        ev = _external(
            log.attributes,
            log.trace_id,
            log.span_id,
            _source(log.scope_name, log.resource),
            log.timestamp_ns,
            "log",
        )
        if ev is not None:
            found.append(ev)
    for span in spans:
        if not span.events or span.scope_name == SCOPE_NAME:
            continue
        for event in span.events:
            if event.name != sc.EVENT_EVALUATION_RESULT or _is_ours(event.attributes):
                continue  # our own events come back on stored run spans when a trace is re-read
            ev = _external(
                event.attributes,
                span.trace_id,
                span.span_id,
                _source(span.scope_name, span.resource),
                event.time_ns,
                "span_event",
            )
            if ev is not None:
                found.append(ev)
    return found
