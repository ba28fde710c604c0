"""Score labelled cases the way a collected run is scored: spans -> reconstruction -> the tool-error metric.

The detectors' prediction for a case is the set of error types of their findings; the judge's (``--judge``) is
the set its combined verdict names. A case whose spans reconstruct to no run, or to more than one, is counted
as a reconstruction miss: the figures then say so rather than scoring something else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.calibration.cases import ERROR_TYPES, LabelledCase
from agentotel_eval.calibration.spans import CONVENTIONS, case_spans
from agentotel_eval.calibration.stats import TypeFigures, figures
from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.pipeline import reconstruct
from agentotel_eval.test_case import EvalTestCase


@dataclass(frozen=True, slots=True)
class Scored:
    id: str
    suite: str
    operator: str
    labels: frozenset[str]
    convention: str
    predicted: frozenset[str]
    findings: tuple[Mapping[str, Any], ...]
    could_not_run: tuple[str, ...]
    runs: int  # agent runs reconstruction found in the case's spans: 1 when it read them right
    status: str = "ok"  # the metric's status: "error" when the judge could not answer

    @property
    def missed(self) -> bool:
        return self.runs != 1


def _predicted(log: Mapping[str, Any], judged: bool) -> frozenset[str]:
    if judged:
        if not log.get("detected"):
            return frozenset()
        return frozenset(t for t in log.get("error_types") or () if t in ERROR_TYPES)
    # a finding the detectors are not sure of is the judge's to decide: not a prediction of the detectors
    return frozenset(
        f["type"]
        for f in log.get("detectors") or ()
        if f.get("type") in ERROR_TYPES and not f.get("uncertain")
    )


def detector_metric(case: LabelledCase) -> ToolsErrorMetric:
    return TOOL_ERRORS_DETECTORS.build(tool_rules=list(case.rules))


def score_case(case: LabelledCase, convention: str, metric: ToolsErrorMetric | None = None) -> Scored:
    """One case through ``convention``'s spans, reconstruction and ``metric`` (default: the detectors)."""
    return score_spans(
        case.id,
        case.suite,
        case.operator,
        case.labels,
        case_spans(case, convention),
        convention,
        metric if metric is not None else detector_metric(case),
    )


def score_spans(
    case_id: str,
    suite: str,
    operator: str,
    labels: frozenset[str],
    spans: Sequence[SpanRecord],
    convention: str,
    metric: ToolsErrorMetric,
) -> Scored:
    """Labelled spans (a case's, or a trace of a user's labelled dataset) through
    reconstruction and ``metric``."""
    runs = reconstruct(spans)
    predicted: set[str] = set()
    findings: list[Mapping[str, Any]] = []
    unchecked: list[str] = []
    status = "ok"
    for run in runs:
        result = metric.measure(run.to_test_case())
        log = result.evaluation_log
        if result.status != "ok":
            status = result.status
        predicted |= _predicted(log, metric.judge)
        findings += log.get("detectors") or ()
        unchecked += log.get("could_not_run") or ()
    return Scored(
        case_id,
        suite,
        operator,
        labels,
        convention,
        frozenset(predicted),
        tuple(findings),
        tuple(dict.fromkeys(unchecked)),
        len(runs),
        status,
    )


def score_text(
    record_id: str, suite: str, labels: frozenset[str], text: str, metric: ToolsErrorMetric
) -> Scored:
    """A free-text transcript (no spans) through ``metric``: the transcript is the run's input, with no calls.
    Only the judge can find anything in it."""
    result = metric.measure(EvalTestCase(input=text, actual_output=""))
    log = result.evaluation_log
    return Scored(
        record_id,
        suite,
        "recorded",
        labels,
        "transcript",
        _predicted(log, metric.judge),
        tuple(log.get("detectors") or ()),
        tuple(log.get("could_not_run") or ()),
        1,
        result.status,
    )


def score_cases(
    cases: Iterable[LabelledCase],
    conventions: Sequence[str] = CONVENTIONS,
    metric: ToolsErrorMetric | None = None,
) -> list[Scored]:
    return [score_case(case, convention, metric) for case in cases for convention in conventions]


def summarise(
    scored: Sequence[Scored], types: Sequence[str] = ERROR_TYPES, *, seed: int = 0
) -> list[TypeFigures]:
    """Figures per type over every scored (case, convention); a judge that failed to answer counts as no
    prediction (it is reported apart by the caller)."""
    return [figures(t, [(t in s.labels, t in s.predicted) for s in scored], seed=seed) for t in types]
