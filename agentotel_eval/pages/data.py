"""What each page shows, read with a handful of SQL statements through a ``Read`` callable: the sealed,
read-only query layer, bound to a collector's cursor or a database file. Values are bound as parameters, never
quoted into the SQL. Results are plain records for ``render``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentotel_eval.metrics.tool_errors import METRIC_DETECTORS, METRIC_JUDGE
from agentotel_eval.pages.filters import PAGE_SIZE, Filters, range_seconds
from agentotel_eval.store.query import QueryResult

#: ``read(sql, params)``: one sealed read-only statement
Read = Callable[[str, Sequence[Any]], QueryResult]
#: metrics whose evaluation log lists missing / extra / out-of-order calls, preferred first
ALIGNMENT_METRICS = ("tool_correctness_ordering", "tool_correctness")
TOP_AGENTS = 6
SPAN_LIMIT = 2000

# The latest evaluation of each (run, metric) among the runs a selection keeps: a run rebuilt or re-scored has
# its rows replaced, but a row from an external tool may be sent twice.
_LATEST = "QUALIFY row_number() OVER (PARTITION BY e.trace_id, e.run_span_id, e.metric " \
          "ORDER BY e.created_at DESC NULLS LAST) = 1"


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def bucket_seconds(since: str) -> int:
    """The chart's time step for a range: about 12 to 48 buckets."""
    seconds = range_seconds(since)
    if seconds is None or seconds > 7 * 86400:
        return 86400
    if seconds > 86400:
        return 6 * 3600
    if seconds > 3600:
        return 3600
    return 300


def _runs_where(f: Filters, now: datetime, *, with_runs_filters: bool = True) -> tuple[str, list[Any]]:
    """The WHERE clause over ``agent_runs r`` for a selection (scores excluded), and its parameters."""
    clauses, params = ["TRUE"], []
    cutoff = f.cutoff(now)
    if cutoff is not None:
        clauses.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
        params.append(cutoff.isoformat())
    if f.agent:
        clauses.append("coalesce(r.agent_name, '(unnamed)') = ?")
        params.append(f.agent)
    if with_runs_filters:
        if f.service:
            clauses.append("r.service_name = ?")
            params.append(f.service)
        if f.q:
            clauses.append("contains(lower(r.input), lower(?))")
            params.append(f.q)
    return " AND ".join(clauses), params


def _rows(result: QueryResult) -> list[dict[str, Any]]:
    return result.records()


# ---- the overview -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class AgentSummary:
    name: str
    runs: int
    failed_runs: int
    last_run: datetime | None
    #: metric -> (scored runs, passed)
    metrics: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: the chart: bucket starts, runs per bucket, metric -> pass rate per bucket
    buckets: list[datetime] = field(default_factory=list)
    runs_per_bucket: list[int] = field(default_factory=list)
    rates: dict[str, list[float | None]] = field(default_factory=dict)


@dataclass(slots=True)
class Overview:
    filters: Filters
    now: datetime
    bucket_seconds: int
    agents: list[AgentSummary]
    #: tool -> {"missing": n, "extra": n, "out of order": n}, most affected first
    departures: list[tuple[str, dict[str, int]]]
    departures_metric: str | None
    #: per tool: calls, errors
    tool_errors: list[dict[str, Any]]
    #: (metric, error type) -> runs with that finding
    findings: list[dict[str, Any]]
    #: the judge's evaluations by status: count, cost
    judge: list[dict[str, Any]]
    total_runs: int = 0
    agent_names: list[str] = field(default_factory=list)


def read_overview(read: Read, f: Filters, now: datetime | None = None) -> Overview:
    now = now or datetime.now(UTC)
    where, params = _runs_where(f, now, with_runs_filters=False)
    step = bucket_seconds(f.since)
    runs_cte = f"WITH runs AS (SELECT r.trace_id, r.span_id, coalesce(r.agent_name, '(unnamed)') AS agent, " \
               f"r.start_time, r.status FROM agent_runs r WHERE {where})"
    ev_cte = (f", ev AS (SELECT r.agent, r.start_time, e.metric, e.success, e.score, e.status, e.details, "
              f"e.cost_usd, e.model FROM evaluations e JOIN runs r ON e.trace_id = r.trace_id "
              f"AND e.run_span_id = r.span_id {_LATEST})")
    agents = {
        row["agent"]: AgentSummary(row["agent"], row["runs"], row["failed_runs"], _utc(row["last_run"]))
        for row in _rows(read(
            f"{runs_cte} SELECT agent, count(*) AS runs, count(*) FILTER (WHERE status = 'error') AS failed_runs, "
            "max(start_time) AS last_run FROM runs GROUP BY agent ORDER BY runs DESC, agent LIMIT 200", params))
    }
    for row in _rows(read(
            f"{runs_cte}{ev_cte} SELECT agent, metric, count(*) AS n, count(*) FILTER (WHERE success) AS passed "
            "FROM ev WHERE status = 'ok' GROUP BY ALL", params)):
        if row["agent"] in agents:
            agents[row["agent"]].metrics[row["metric"]] = (row["n"], row["passed"])
    top = list(agents.values())[:TOP_AGENTS]
    _read_series(read, top, runs_cte, ev_cte, params, step)
    metrics_seen = {m for a in agents.values() for m in a.metrics}
    departures_metric = next((m for m in ALIGNMENT_METRICS if m in metrics_seen), None)
    departures: dict[str, dict[str, int]] = {}
    if departures_metric:
        for row in _rows(read(
                f"{runs_cte}{ev_cte}, chosen AS (SELECT details FROM ev WHERE metric = ? AND status = 'ok') "
                "SELECT kind, tool, count(*) AS n FROM ("
                "SELECT 'missing' AS kind, unnest(json_extract_string(details, '$.missing[*]')) AS tool FROM chosen "
                "UNION ALL SELECT 'extra', unnest(json_extract_string(details, '$.extra[*]')) FROM chosen "
                "UNION ALL SELECT 'out of order', unnest(json_extract_string(details, '$.out_of_order[*].name')) "
                "FROM chosen) GROUP BY ALL", [*params, departures_metric])):
            departures.setdefault(row["tool"], {})[row["kind"]] = row["n"]
    ranked = sorted(departures.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:12]
    tool_where = "TRUE"
    tool_params: list[Any] = []
    cutoff = f.cutoff(now)
    if cutoff is not None:
        tool_where += " AND start_time >= CAST(? AS TIMESTAMPTZ)"
        tool_params.append(cutoff.isoformat())
    if f.agent:
        tool_where += " AND coalesce(agent_name, '(unnamed)') = ?"
        tool_params.append(f.agent)
    tool_errors = _rows(read(
        "SELECT tool_name, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors, "
        "round(count(*) FILTER (WHERE status = 'error') / count(*), 4) AS error_rate "
        f"FROM tool_calls WHERE {tool_where} GROUP BY tool_name "
        "ORDER BY errors DESC, error_rate DESC, calls DESC, tool_name LIMIT 15", tool_params))
    findings = _rows(read(
        f"{runs_cte}{ev_cte} SELECT metric, error_type, count(*) AS runs FROM ("
        "SELECT metric, unnest(json_extract_string(details, '$.error_types[*]')) AS error_type FROM ev "
        "WHERE metric IN (?, ?) AND status = 'ok') GROUP BY ALL ORDER BY runs DESC, error_type",
        [*params, METRIC_JUDGE, METRIC_DETECTORS]))
    judge = _rows(read(
        f"{runs_cte}{ev_cte} SELECT status, count(*) AS evaluations, round(sum(cost_usd), 6) AS cost_usd, "
        "string_agg(DISTINCT model, ', ') AS models FROM ev WHERE metric = ? GROUP BY status ORDER BY status",
        [*params, METRIC_JUDGE]))
    names = [row["agent"] for row in _rows(read(
        "SELECT DISTINCT coalesce(agent_name, '(unnamed)') AS agent FROM agent_runs ORDER BY agent LIMIT 500", []))]
    return Overview(
        filters=f, now=now, bucket_seconds=step, agents=list(agents.values()), departures=ranked,
        departures_metric=departures_metric, tool_errors=tool_errors, findings=findings, judge=judge,
        total_runs=sum(a.runs for a in agents.values()), agent_names=names,
    )


def _read_series(read: Read, agents: Sequence[AgentSummary], runs_cte: str, ev_cte: str, params: list[Any],
                 step: int) -> None:
    """Fill each agent's chart: runs and pass rate per metric per time bucket."""
    if not agents:
        return
    marks = ", ".join("?" for _ in agents)
    names = [a.name for a in agents]
    bucket = f"time_bucket(INTERVAL '{int(step)} seconds', start_time)"
    counts = _rows(read(f"{runs_cte} SELECT agent, {bucket} AS bucket, count(*) AS runs FROM runs "
                        f"WHERE agent IN ({marks}) GROUP BY ALL ORDER BY bucket", [*params, *names]))
    rates = _rows(read(f"{runs_cte}{ev_cte} SELECT agent, {bucket} AS bucket, metric, count(*) AS n, "
                       f"count(*) FILTER (WHERE success) AS passed FROM ev WHERE status = 'ok' "
                       f"AND agent IN ({marks}) GROUP BY ALL", [*params, *names]))
    by_name = {a.name: a for a in agents}
    starts = sorted({moment for row in counts if (moment := _utc(row["bucket"])) is not None})
    index = {moment: k for k, moment in enumerate(starts)}
    for a in agents:
        a.buckets = list(starts)
        a.runs_per_bucket = [0] * len(starts)
        a.rates = {m: [None] * len(starts) for m in sorted(a.metrics)}
    for row in counts:
        by_name[row["agent"]].runs_per_bucket[index[_utc(row["bucket"])]] = row["runs"]  # type: ignore[index]
    for row in rates:
        moment = _utc(row["bucket"])
        agent = by_name[row["agent"]]
        if moment in index and row["metric"] in agent.rates and row["n"]:
            agent.rates[row["metric"]][index[moment]] = row["passed"] / row["n"]


# ---- the runs table -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class RunsPage:
    filters: Filters
    runs: list[dict[str, Any]]  # agent_runs columns, plus "scores": [{metric, score, success, status}]
    total: int
    has_next: bool
    agents: list[str]
    services: list[str]
    metrics: list[str]


def _score_filter(f: Filters) -> tuple[str, list[Any]]:
    """The runs-table condition on scores: a metric and/or pass / fail (fail: any metric failed)."""
    if not f.metric and not f.result:
        return "", []
    metric_clause = "AND e.metric = ?" if f.metric else ""
    params: list[Any] = [f.metric] if f.metric else []
    scored = (f"SELECT e.trace_id, e.run_span_id, e.success FROM evaluations e "
              f"WHERE e.status = 'ok' {metric_clause} {_LATEST}")
    if f.result == "fail":
        inner = f"SELECT trace_id, run_span_id FROM ({scored}) WHERE NOT success"
    elif f.result == "pass":
        inner = f"SELECT trace_id, run_span_id FROM ({scored}) GROUP BY ALL HAVING bool_and(success)"
    else:
        inner = f"SELECT trace_id, run_span_id FROM ({scored})"
    return f" AND (r.trace_id, r.span_id) IN ({inner})", params


def read_runs(read: Read, f: Filters, now: datetime | None = None) -> RunsPage:
    now = now or datetime.now(UTC)
    where, params = _runs_where(f, now)
    score_clause, score_params = _score_filter(f)
    where += score_clause
    params += score_params
    offset = (f.page - 1) * PAGE_SIZE
    runs = _rows(read(
        "SELECT r.trace_id, r.span_id, r.agent_name, r.service_name, r.start_time, r.end_time, r.status, "
        "r.tools_called, r.expected_tools, left(r.input, 240) AS input, r.tool_call_count, r.parent_run_span_id "
        f"FROM agent_runs r WHERE {where} ORDER BY r.start_time DESC, r.trace_id, r.span_id "
        f"LIMIT {PAGE_SIZE + 1} OFFSET {int(offset)}", params))
    has_next = len(runs) > PAGE_SIZE
    runs = runs[:PAGE_SIZE]
    total = _rows(read(f"SELECT count(*) AS n FROM agent_runs r WHERE {where}", params))[0]["n"]
    _attach_scores(read, runs)
    agents = [r["agent"] for r in _rows(read(
        "SELECT DISTINCT coalesce(agent_name, '(unnamed)') AS agent FROM agent_runs ORDER BY agent LIMIT 500", []))]
    services = [r["service_name"] for r in _rows(read(
        "SELECT DISTINCT service_name FROM agent_runs WHERE service_name IS NOT NULL ORDER BY 1 LIMIT 500", []))]
    metrics = [r["metric"] for r in _rows(read("SELECT DISTINCT metric FROM evaluations ORDER BY 1 LIMIT 200", []))]
    return RunsPage(f, runs, total, has_next, agents, services, metrics)


def _attach_scores(read: Read, runs: list[dict[str, Any]]) -> None:
    """Each run's latest evaluations, as ``run["scores"]``."""
    for run in runs:
        run["scores"] = []
    if not runs:
        return
    traces = sorted({r["trace_id"] for r in runs})
    marks = ", ".join("?" for _ in traces)
    rows = _rows(read(
        "SELECT e.trace_id, e.run_span_id, e.metric, e.score, e.success, e.status, e.expected "
        "FROM (SELECT *, json_extract_string(details, '$.expected[*]') AS expected FROM evaluations "
        f"WHERE trace_id IN ({marks})) e {_LATEST} ORDER BY e.metric", traces))
    by_run = {(r["trace_id"], r["span_id"]): r for r in runs}
    for row in rows:
        owner = by_run.get((row.pop("trace_id"), row.pop("run_span_id")))
        if owner is not None:
            owner["scores"].append(row)


# ---- one run ------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class RunDetail:
    run: dict[str, Any]
    calls: list[dict[str, Any]]
    evaluations: list[dict[str, Any]]
    spans: list[dict[str, Any]]
    spans_truncated: bool
    #: the trace's other runs: span_id -> agent name (for the span tree's marks and links)
    trace_runs: dict[str, str]
    #: the expected tools the alignment is drawn against, and where they came from
    expected: list[str] | None
    expected_source: str


def read_run(read: Read, trace_id: str, span_id: str) -> RunDetail | None:
    found = _rows(read("SELECT * FROM agent_runs WHERE trace_id = ? AND span_id = ?", [trace_id, span_id]))
    if not found:
        return None
    run = found[0]
    calls = _rows(read("SELECT * FROM tool_calls WHERE trace_id = ? AND run_span_id = ? ORDER BY seq",
                       [trace_id, span_id]))
    evaluations = _rows(read(
        f"SELECT * FROM evaluations e WHERE e.trace_id = ? AND e.run_span_id = ? {_LATEST} ORDER BY e.metric",
        [trace_id, span_id]))
    spans_result = read(
        "SELECT span_id, parent_span_id, name, kind, start_time_unix_nano, end_time_unix_nano, status_code, "
        f"status_message, scope_name FROM spans WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id "
        f"LIMIT {SPAN_LIMIT + 1}", [trace_id])
    spans = _rows(spans_result)
    trace_runs = {r["span_id"]: r["agent_name"] or "(unnamed)" for r in _rows(read(
        "SELECT span_id, agent_name FROM agent_runs WHERE trace_id = ?", [trace_id]))}
    expected, source = _expected(run, evaluations)
    return RunDetail(run, calls, evaluations, spans[:SPAN_LIMIT], len(spans) > SPAN_LIMIT, trace_runs,
                     expected, source)


def _expected(run: dict[str, Any], evaluations: Sequence[dict[str, Any]]) -> tuple[list[str] | None, str]:
    """The expected tools: those the tool-correctness score used (a rule or dataset may have supplied them), else
    the run's own."""
    by_metric = {e["metric"]: e for e in evaluations}
    for metric in ALIGNMENT_METRICS:
        details = (by_metric.get(metric) or {}).get("details") or {}
        if isinstance(details.get("expected"), list):
            source = details.get("expectation") or metric
            return [str(name) for name in details["expected"]], str(source)
    if run.get("expected_tools") is not None:
        return list(run["expected_tools"]), "the run's span"
    return None, ""


def latest_version(read: Read) -> dict[str, Any]:
    """What changes when runs or scores arrive: the pages poll it and refresh when it moves."""
    row = _rows(read(
        "SELECT (SELECT count(*) FROM agent_runs) AS runs, (SELECT max(updated_at) FROM agent_runs) AS runs_at, "
        "(SELECT count(*) FROM evaluations) AS evaluations, "
        "(SELECT max(updated_at) FROM evaluations) AS evaluations_at", []))[0]
    return row


def read_worst(read: Read, f: Filters, limit: int, now: datetime | None = None) -> list[dict[str, Any]]:
    """The runs that failed the most metrics, lowest score first (rows as in ``read_runs``, with scores)."""
    now = now or datetime.now(UTC)
    where, params = _runs_where(f, now)
    runs = _rows(read(
        "WITH runs AS (SELECT r.* FROM agent_runs r WHERE " + where + "), "
        "ev AS (SELECT e.trace_id, e.run_span_id, e.success, e.score FROM evaluations e JOIN runs r "
        f"ON e.trace_id = r.trace_id AND e.run_span_id = r.span_id WHERE e.status = 'ok' {_LATEST}), "
        "failing AS (SELECT trace_id, run_span_id, count(*) FILTER (WHERE NOT success) AS failed, "
        "min(score) AS lowest FROM ev GROUP BY ALL HAVING count(*) FILTER (WHERE NOT success) > 0) "
        "SELECT r.trace_id, r.span_id, r.agent_name, r.service_name, r.start_time, r.end_time, r.status, "
        "r.tools_called, r.expected_tools, left(r.input, 240) AS input, r.tool_call_count, r.parent_run_span_id "
        "FROM failing x JOIN runs r ON r.trace_id = x.trace_id AND r.span_id = x.run_span_id "
        f"ORDER BY x.failed DESC, x.lowest ASC NULLS LAST, r.start_time DESC LIMIT {int(limit)}", params))
    _attach_scores(read, runs)
    return runs
