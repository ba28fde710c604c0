"""Two sets of scored runs compared: per agent and metric the pass rate and mean score of each and the
difference; per tool how often it went missing, extra or out of order in each; the inputs that passed before
and fail now. Pure functions over plain records (``ScoredRun``); ``agentotel-eval compare`` loads them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.metrics.registry import metric_label, tool_correctness

DEPARTURES = ("missing", "extra", "out of order")
#: metrics whose evaluation log lists missing / extra / out-of-order calls, preferred first
ALIGNMENT_METRICS = (tool_correctness(ordering=True).name, tool_correctness().name)


@dataclass(frozen=True, slots=True)
class ScoredRun:
    """One run's (or test case's) score under one metric, with the calls that departed
    from its expectation."""

    agent: str
    input: str
    metric: str
    score: float | None
    success: bool
    ref: str = ""  # trace_id/span_id, or the case's line
    departures: tuple[tuple[str, str], ...] = ()  # (kind, tool)


def departures(lists: Any) -> tuple[tuple[str, str], ...]:
    """``ScoredRun.departures`` from an alignment log's ``[missing, extra, out_of_order]`` lists (as the tool
    correctness metrics write them; anything else is no departure)."""
    if not isinstance(lists, list) or len(lists) < 3:
        return ()
    missing, extra, out_of_order = (x if isinstance(x, list) else [] for x in lists[:3])
    return (
        *(("missing", str(t)) for t in missing),
        *(("extra", str(t)) for t in extra),
        *(("out of order", str(o.get("name"))) for o in out_of_order if isinstance(o, dict)),
    )


@dataclass(frozen=True, slots=True)
class MetricRow:
    agent: str
    metric: str
    baseline_runs: int
    baseline_pass_rate: float | None
    baseline_mean: float | None
    candidate_runs: int
    candidate_pass_rate: float | None
    candidate_mean: float | None

    @property
    def pass_rate_change(self) -> float | None:
        if self.baseline_pass_rate is None or self.candidate_pass_rate is None:
            return None
        return self.candidate_pass_rate - self.baseline_pass_rate


@dataclass(frozen=True, slots=True)
class ToolRow:
    tool: str
    #: kind -> share of runs with that departure of this tool, in the baseline and the candidate
    baseline: dict[str, float]
    candidate: dict[str, float]


@dataclass(frozen=True, slots=True)
class Regression:
    agent: str
    input: str
    metric: str
    baseline_score: float | None
    candidate_score: float | None
    baseline_ref: str
    candidate_ref: str


@dataclass(slots=True)
class Comparison:
    metrics: list[MetricRow]
    tools: list[ToolRow]
    regressions: list[Regression]
    baseline_runs: int
    candidate_runs: int
    notes: list[str] = field(default_factory=list)

    def worst_drop(self) -> MetricRow | None:
        """The (agent, metric) whose pass rate fell the most, if any fell."""
        drops = [m for m in self.metrics if (m.pass_rate_change or 0.0) < 0]
        return min(drops, key=lambda m: m.pass_rate_change or 0.0) if drops else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_runs": self.baseline_runs,
            "candidate_runs": self.candidate_runs,
            "metrics": [
                {
                    "agent": m.agent,
                    "metric": m.metric,
                    "baseline_runs": m.baseline_runs,
                    "baseline_pass_rate": m.baseline_pass_rate,
                    "baseline_mean_score": m.baseline_mean,
                    "candidate_runs": m.candidate_runs,
                    "candidate_pass_rate": m.candidate_pass_rate,
                    "candidate_mean_score": m.candidate_mean,
                    "pass_rate_change": m.pass_rate_change,
                }
                for m in self.metrics
            ],
            "tools": [{"tool": t.tool, "baseline": t.baseline, "candidate": t.candidate} for t in self.tools],
            "regressions": [
                {
                    "agent": r.agent,
                    "input": r.input,
                    "metric": r.metric,
                    "baseline_score": r.baseline_score,
                    "candidate_score": r.candidate_score,
                    "baseline_run": r.baseline_ref,
                    "candidate_run": r.candidate_ref,
                }
                for r in self.regressions
            ],
            "notes": self.notes,
        }


def _summaries(rows: Iterable[ScoredRun]) -> dict[tuple[str, str], tuple[int, int, float, int]]:
    """(agent, metric) -> (runs, passed, score sum, scored runs)."""
    out: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        entry = out.setdefault((r.agent, r.metric), [0, 0, 0.0, 0])
        entry[0] += 1
        entry[1] += r.success
        if r.score is not None:
            entry[2] += r.score
            entry[3] += 1
    return {k: (int(v[0]), int(v[1]), v[2], int(v[3])) for k, v in out.items()}


def _departure_shares(rows: Sequence[ScoredRun], metric: str) -> tuple[dict[str, dict[str, float]], int]:
    """tool -> kind -> share of the runs scored under ``metric`` that had that departure
    (counted once a run)."""
    scored = [r for r in rows if r.metric == metric]
    counts: dict[str, dict[str, int]] = {}
    for r in scored:
        for kind, tool in set(r.departures):
            counts.setdefault(tool, {}).setdefault(kind, 0)
            counts[tool][kind] += 1
    n = len(scored) or 1
    return {tool: {kind: c / n for kind, c in kinds.items()} for tool, kinds in counts.items()}, len(scored)


def departure_metric(rows: Iterable[ScoredRun]) -> str | None:
    """The metric whose logs list departures: the ordering score's, else the default one's."""
    metrics = {r.metric for r in rows if r.departures}
    for name in ALIGNMENT_METRICS:
        if name in metrics:
            return name
    return None


ALL_AGENTS = "(all agents)"


def compare(
    baseline: Sequence[ScoredRun], candidate: Sequence[ScoredRun], *, max_regressions: int = 50
) -> Comparison:
    """The comparison; with several agents, each metric also over all of them (``ALL_AGENTS``)."""
    before, after = _summaries(baseline), _summaries(candidate)
    if len({agent for agent, _ in (*before, *after)}) > 1:
        before.update(_summaries(ScoredRun(ALL_AGENTS, "", r.metric, r.score, r.success) for r in baseline))
        after.update(_summaries(ScoredRun(ALL_AGENTS, "", r.metric, r.score, r.success) for r in candidate))
    metrics = []
    for agent, metric in sorted(set(before) | set(after)):
        b = before.get((agent, metric), (0, 0, 0.0, 0))
        c = after.get((agent, metric), (0, 0, 0.0, 0))
        metrics.append(
            MetricRow(
                agent,
                metric,
                b[0],
                b[1] / b[0] if b[0] else None,
                b[2] / b[3] if b[3] else None,
                c[0],
                c[1] / c[0] if c[0] else None,
                c[2] / c[3] if c[3] else None,
            )
        )
    notes: list[str] = []
    chosen = departure_metric([*baseline, *candidate])
    tools: list[ToolRow] = []
    if chosen is not None:
        b_shares, _ = _departure_shares(baseline, chosen)
        c_shares, _ = _departure_shares(candidate, chosen)
        for tool in sorted(set(b_shares) | set(c_shares)):
            tools.append(ToolRow(tool, b_shares.get(tool, {}), c_shares.get(tool, {})))
        tools.sort(key=lambda t: -max(sum(t.candidate.values()), sum(t.baseline.values())))
        notes.append(f"departures from {chosen}, as a share of the runs it scored")
    # the same input, the same metric: passed in every baseline run, failed in some candidate run
    passed_before: dict[tuple[str, str, str], ScoredRun] = {}
    failed_before: set[tuple[str, str, str]] = set()
    for r in baseline:
        key = (r.agent, r.input, r.metric)
        if r.success:
            passed_before.setdefault(key, r)
        else:
            failed_before.add(key)
    regressions = []
    seen: set[tuple[str, str, str]] = set()
    for r in candidate:
        key = (r.agent, r.input, r.metric)
        if not r.success and key in passed_before and key not in failed_before and key not in seen:
            seen.add(key)
            earlier = passed_before[key]
            regressions.append(
                Regression(r.agent, r.input, r.metric, earlier.score, r.score, earlier.ref, r.ref)
            )
    regressions.sort(key=lambda g: (g.agent, g.metric, g.input))
    if len(regressions) > max_regressions:
        notes.append(f"{len(regressions) - max_regressions} more regressions not listed")
        regressions = regressions[:max_regressions]
    runs = lambda rows: len({r.ref or id(r) for r in rows})  # noqa: E731
    return Comparison(metrics, tools, regressions, runs(baseline), runs(candidate), notes)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def points(change: float | None) -> str:
    """A change of a 0-1 rate in percentage points: -1.0 is "-100.0 pts" (not a relative "-100%")."""
    return "-" if change is None else f"{change * 100:+.1f} pts"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header))]
    return [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def render(c: Comparison, threshold: float | None = None) -> str:
    out = [f"baseline: {c.baseline_runs} run(s), candidate: {c.candidate_runs} run(s)", ""]
    rows = []
    for m in c.metrics:
        change = m.pass_rate_change
        flag = " REGRESSION" if threshold is not None and change is not None and change < -threshold else ""
        arrow = metric_label(m.metric).arrow
        rows.append(
            [
                m.agent,
                f"{m.metric} {arrow}".strip(),
                f"{_pct(m.baseline_pass_rate)} ({m.baseline_runs})",
                _num(m.baseline_mean),
                f"{_pct(m.candidate_pass_rate)} ({m.candidate_runs})",
                _num(m.candidate_mean),
                points(change) + flag,
            ]
        )
    out += _table(
        [
            "agent",
            "metric",
            "baseline passed",
            "mean score",
            "candidate passed",
            "mean score",
            "pass rate change",
        ],
        rows,
    )
    out.append(
        "passed: the share of runs that passed (runs); scores are 0 to 1, ↑ higher is better, ↓ lower is "
        "better; the change is in percentage points"
    )
    if c.tools:
        out += ["", "tools departing from the expectation (share of runs: baseline -> candidate)"]
        out += _table(
            ["tool", *DEPARTURES],
            [
                [
                    t.tool,
                    *(
                        f"{_pct(t.baseline.get(k, 0.0))} -> {_pct(t.candidate.get(k, 0.0))}"
                        for k in DEPARTURES
                    ),
                ]
                for t in c.tools
            ],
        )
    out += [
        "",
        f"passed before, fail now ({len(c.regressions)}):"
        if c.regressions
        else "no input that passed in the baseline fails in the candidate",
    ]
    for g in c.regressions:
        text = " ".join(g.input.split())
        out.append(
            f"  {g.agent} {g.metric}: {_num(g.baseline_score)} -> {_num(g.candidate_score)}  "
            f"{text[:70]!r}  ({g.baseline_ref} -> {g.candidate_ref})"
        )
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)
