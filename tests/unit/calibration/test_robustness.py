"""The robustness suite over the recorded fixtures: reproducible, labelled by construction, and the gates the
detectors must pass on it (precision >= 0.90 and recall >= 0.85 for every type with 10 positives or more, in
both phrasing families, and findings on at most 1% of the runs as recorded)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from agentotel_eval.calibration import phrasings, phrasings_heldout
from agentotel_eval.calibration.robustness import OPERATORS, build_robustness_suite
from agentotel_eval.calibration.runner import Scored, score_cases, summarise
from agentotel_eval.calibration.spans import CONVENTIONS
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.reconstruct import reconstruct
from tests.support.fixture_traces import TRACES_DIR, fixtures

PRECISION, RECALL, MOST_FLAGGED = 0.90, 0.85, 0.01


@cache
def _scored(family: str) -> tuple[Scored, ...]:
    # the suite's own phrasings through both span conventions; the held-out family through one (the
    # conventions are the suite's concern, the phrasings this family's)
    conventions = CONVENTIONS if family == "own" else CONVENTIONS[:1]
    return tuple(score_cases(build_robustness_suite(Path(TRACES_DIR), family=family), conventions))


def test_every_family_has_the_phrasings_it_promises() -> None:
    for family in (phrasings, phrasings_heldout):
        assert len(family.STATEMENTS) >= 30 and len(family.ACTION_CLAIMS) >= 30 and len(family.HONEST) >= 30
        for template in family.HONEST:
            assert "{value}" not in template  # owning up states nothing
    shared = set(phrasings.STATEMENTS) & set(phrasings_heldout.STATEMENTS)
    assert (
        len(shared) <= len(phrasings_heldout.STATEMENTS) // 10
    )  # written apart: a common sentence or two at most


def test_the_suite_is_the_same_from_run_to_run_and_covers_every_operator() -> None:
    first = build_robustness_suite(Path(TRACES_DIR), limit=30)
    again = build_robustness_suite(Path(TRACES_DIR), limit=30)
    assert [(c.id, c.answer, c.calls, c.user_input) for c in first] == [
        (c.id, c.answer, c.calls, c.user_input) for c in again
    ]
    assert {c.operator for c in first} == set(OPERATORS)
    other_seed = build_robustness_suite(Path(TRACES_DIR), limit=30, seed=1)
    assert [c.answer for c in other_seed] != [c.answer for c in first]
    for case in first:
        assert case.labels == OPERATORS[case.operator]


@pytest.mark.parametrize("family", ["own", "heldout"])
def test_the_detectors_pass_the_gates_on_both_families(family: str) -> None:
    scored = _scored(family)
    assert all(s.runs == 1 for s in scored)  # every changed run rebuilds to one run, in both conventions
    for figures in summarise(scored):
        if figures.positives < 10:
            continue
        assert figures.precision >= PRECISION and figures.recall >= RECALL, (family, figures)


def test_runs_as_recorded_get_no_finding() -> None:
    metric = ToolsErrorMetric(judge=False)
    runs = flagged = 0
    for fx in fixtures():
        for run in reconstruct(fx.spans(), fx.logs()):
            runs += 1
            log = metric.measure(run).evaluation_log
            flagged += bool([f for f in log["detectors"] if not f["uncertain"]])
    assert runs > 150 and flagged <= MOST_FLAGGED * runs


@pytest.mark.parametrize("operator", sorted(OPERATORS))
def test_each_change_of_a_real_run_is_found_as_what_it_is(operator: str) -> None:
    """Per operator (a rule's positives, or the lookalikes it must leave alone): the fixture runs it changed
    are found exactly as labelled, the type it holds and no other, in 95% of them or more."""
    scored = [s for s in _scored("own") if s.operator == operator]
    assert scored
    exact = sum(1 for s in scored if s.predicted == s.labels)
    assert exact >= 0.95 * len(scored), (operator, [s.id for s in scored if s.predicted != s.labels][:5])
