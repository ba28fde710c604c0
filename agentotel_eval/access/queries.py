"""The domain queries: what the pages, the report and the commands show, read with a handful of SQL statements
through a ``Read`` callable: the sealed, read-only query layer, bound to a collector's cursor or to a database
file (``agentotel_eval.access.client.reader``). Values are bound as parameters, never quoted into the SQL.
Results are plain records (for ``agentotel_eval.pages``' rendering, or a command's output)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentotel_eval.access.filters import PAGE_SIZE, Filters, range_seconds
from agentotel_eval.access.specs import Selection
from agentotel_eval.comparison import ALIGNMENT_METRICS, ScoredRun, departures
from agentotel_eval.metrics.registry import TOOL_ERRORS, TOOL_ERRORS_DETECTORS, TRAJECTORY
from agentotel_eval.store.query import QueryResult
from agentotel_eval.store.schema import OWN_SOURCE
from agentotel_eval.stored_cases import case_of, expectations_of
from agentotel_eval.test_case import EvalTestCase
from agentotel_eval.trace_ids import TraceIdError, prefix_bounds, trace_reference

#: ``read(sql, params)``: one sealed read-only statement
Read = Callable[[str, Sequence[Any]], QueryResult]
TOP_AGENTS = 6
SPAN_LIMIT = 2000

_OWN = f"'{OWN_SOURCE}'"
_SAME_KEY = "e.trace_id = o.trace_id AND e.run_span_id = o.run_span_id AND e.metric = o.metric"
_NEWEST = (
    "QUALIFY row_number() OVER (PARTITION BY e.trace_id, e.run_span_id, e.metric "
    "ORDER BY e.created_at DESC NULLS LAST) = 1"
)


def latest_of_few(where: str, params: Sequence[Any], columns: str = "e.*") -> tuple[str, list[Any]]:
    """``latest_evaluations`` for a selection of a few runs (a run, a page of runs): one scan and a window
    over the rows it keeps, cheaper there than the anti-join's three scans."""
    return f"(SELECT {columns} FROM evaluations e WHERE {where} {_NEWEST})", list(params)


def only_own_scores(read: Read) -> bool:
    """Whether every stored evaluation is the collector's own: then each run and metric has one row (a
    re-scored run's rows are replaced) and the table itself is the latest evaluations."""
    return not _rows(
        read(f"SELECT 1 AS found FROM evaluations WHERE source IS DISTINCT FROM {_OWN} LIMIT 1", [])
    )


def latest_evaluations(
    where: str = "TRUE", params: Sequence[Any] = (), columns: str = "e.*", *, only_own: bool = False
) -> tuple[str, list[Any]]:
    """A subquery of the latest evaluation of each run and metric (``latest_evaluations``'s rows), among those
    ``where`` keeps: a condition on ``e``'s key columns only (trace_id, run_span_id, metric), as any other
    would change which row is the latest. ``columns``: those the caller reads (DuckDB does not prune them
    through the union, and an evaluation log carried by every row is most of the cost). Returns the SQL
    and its parameters.

    The collector keeps one row of its own per run and metric, so only a key another tool scored too can have
    several rows. With ``only_own`` (``only_own_scores``) there are none and the table is read as it is; else
    those keys alone pay for the window that picks the newest, and the rest is an anti-join against them. Over
    100,000 runs a window over every row was 2.5 times slower than the plain table and spilled past the
    collector's DuckDB memory limit."""
    if only_own:
        return f"(SELECT {columns} FROM evaluations e WHERE {where})", list(params)
    sql = (
        f"(WITH o AS (SELECT DISTINCT trace_id, run_span_id, metric FROM evaluations e "
        f"WHERE e.source IS DISTINCT FROM {_OWN} AND ({where})) "
        f"SELECT {columns} FROM evaluations e ANTI JOIN o ON {_SAME_KEY} WHERE e.source = {_OWN} AND "
        f"({where}) UNION ALL SELECT {columns} FROM evaluations e SEMI JOIN o ON {_SAME_KEY} WHERE "
        f"({where}) {_NEWEST})"
    )
    return sql, [*params, *params, *params]


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_STEPS = (300, 3600, 6 * 3600, 86400, 7 * 86400)


def bucket_seconds(since: str, span_seconds: float | None = None) -> int:
    """The chart's time step: about 12 to 60 buckets over the range (for "all", over ``span_seconds``, the
    time between the first and the last run)."""
    seconds = range_seconds(since)
    if seconds is None:
        seconds = span_seconds or 0
    return next((step for step in _STEPS if seconds / step <= 60), _STEPS[-1])


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
            reference = _trace_reference_or_none(f.q)
            if reference is None:
                clauses.append("contains(lower(r.input), lower(?))")
                params.append(f.q)
            # a trace id, or the 8+ digit prefix the pages and pytest's messages show: that trace's runs too
            else:
                low, high = prefix_bounds(reference)
                clauses.append("(contains(lower(r.input), lower(?)) OR r.trace_id BETWEEN ? AND ?)")
                params.extend([f.q, low, high])
    return " AND ".join(clauses), params


def _trace_reference_or_none(text: str) -> str | None:
    try:
        return trace_reference(text)
    except TraceIdError:
        return None


def _rows(result: QueryResult) -> list[dict[str, Any]]:
    return result.records()


# ---- the overview ------------------------------------------------------------------------------------------


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


def in_turn(tasks: Sequence[Callable[[], QueryResult]]) -> list[QueryResult]:
    """Run independent reads one after the other (a ``Gather``)."""
    return [task() for task in tasks]


#: runs independent reads and returns their results in order: ``in_turn``, or concurrently on a pool
Gather = Callable[[Sequence[Callable[[], QueryResult]]], list[QueryResult]]


def read_overview(read: Read, f: Filters, now: datetime | None = None, gather: Gather = in_turn) -> Overview:
    """One statement for the agents (the chart's step and which scores exist follow from it), then six
    independent ones, through ``gather``: runs per time bucket, the figures made of scores (``_SCORES_SQL``
    and the two after it), the tool calls' error rates, and the agents to choose from."""
    now = now or datetime.now(UTC)
    where, params = _runs_where(f, now, with_runs_filters=False)
    runs_cte = (
        "WITH runs AS (SELECT r.trace_id, r.span_id, coalesce(r.agent_name, '(unnamed)') AS agent, "
        f"r.start_time, r.status FROM agent_runs r WHERE {where})"
    )
    agent_rows = _rows(
        read(
            f"{runs_cte} SELECT agent, count(*) AS runs, count(*) FILTER (WHERE status = 'error') AS "
            f"failed_runs, max(start_time) AS last_run, epoch(max(start_time)) - epoch(min(start_time)) AS "
            f"span, (SELECT list(DISTINCT metric) FROM evaluations) AS metrics, "
            f"NOT EXISTS (SELECT 1 FROM evaluations WHERE source IS DISTINCT FROM {_OWN}) AS only_own "
            "FROM runs GROUP BY agent ORDER BY runs DESC, agent LIMIT 200",
            params,
        )
    )
    agents = {
        row["agent"]: AgentSummary(row["agent"], row["runs"], row["failed_runs"], _utc(row["last_run"]))
        for row in agent_rows
    }
    step = bucket_seconds(f.since, max((row["span"] or 0 for row in agent_rows), default=0))
    present = set(agent_rows[0]["metrics"] or ()) if agent_rows else set()
    only_own = bool(agent_rows[0]["only_own"]) if agent_rows else True
    # epoch arithmetic, not time_bucket: on TIMESTAMPTZ that goes through ICU, 7 times slower per row
    bucket = f"epoch_ms(start_time) // {int(step) * 1000}"
    top = list(agents)[:TOP_AGENTS]
    marks = ", ".join("?" for _ in top) or "NULL"
    aligned = next((m for m in ALIGNMENT_METRICS if m in present), ALIGNMENT_METRICS[0])

    def statement(
        template: str, metrics: Sequence[str] | None, columns: str, extra: Sequence[Any] = ()
    ) -> Callable[[], QueryResult]:
        clause = f"e.metric IN ({', '.join('?' for _ in metrics)})" if metrics is not None else "TRUE"
        latest, bound = latest_evaluations(
            clause, metrics or (), "e.trace_id, e.run_span_id, e.metric, " + columns, only_own=only_own
        )
        # every run is selected: the departures need not be matched to runs (an own score always has its run)
        in_selection = (
            ""
            if f.since == "all" and not f.agent
            else "SEMI JOIN runs r ON p.trace_id = r.trace_id AND p.run_span_id = r.span_id"
        )
        sql = template.format(runs=runs_cte, bucket=bucket, latest=latest, in_selection=in_selection)
        return lambda: read(sql, [*params, *bound, *extra])

    tool_where = "TRUE"
    tool_params: list[Any] = []
    cutoff = f.cutoff(now)
    if cutoff is not None:
        tool_where += " AND start_time >= CAST(? AS TIMESTAMPTZ)"
        tool_params.append(cutoff.isoformat())
    if f.agent:
        tool_where += " AND coalesce(agent_name, '(unnamed)') = ?"
        tool_params.append(f.agent)
    nothing = QueryResult(columns=[], types=[], rows=[])
    counts_result, scores_result, departures_result, findings_result, tool_result, names_result = gather(
        [
            (
                lambda: read(
                    f"{runs_cte} SELECT agent, {bucket} AS bucket, count(*) AS runs FROM runs "
                    f"WHERE agent IN ({marks}) GROUP BY ALL",
                    [*params, *top],
                )
            )
            if top
            else (lambda: nothing),
            statement(_SCORES_SQL, None, "e.success, e.status, e.cost_usd, e.model", [TOOL_ERRORS.name]),
            statement(
                _DEPARTURES_SQL,
                [aligned],
                "e.status, json_extract(e.details, ['$.missing', '$.extra', '$.out_of_order']) AS j",
            )
            if aligned in present
            else (lambda: nothing),
            statement(
                _FINDINGS_SQL, [TOOL_ERRORS.name, TOOL_ERRORS_DETECTORS.name], "e.status, e.score, e.details"
            ),
            lambda: read(
                "SELECT tool_name, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors, "
                "round(count(*) FILTER (WHERE status = 'error') / count(*), 4) AS error_rate "
                f"FROM tool_calls WHERE {tool_where} GROUP BY tool_name "
                "ORDER BY errors DESC, error_rate DESC, calls DESC, tool_name LIMIT 15",
                tool_params,
            ),
            lambda: read(
                "SELECT DISTINCT coalesce(agent_name, '(unnamed)') AS agent FROM agent_runs "
                "ORDER BY agent LIMIT 500",
                [],
            ),
        ]
    )
    judge: dict[str, dict[str, Any]] = {}
    series: list[dict[str, Any]] = []
    for row in _rows(scores_result):
        if row["status"] == "ok" and row["agent"] in agents:
            n, passed = agents[row["agent"]].metrics.get(row["metric"], (0, 0))
            agents[row["agent"]].metrics[row["metric"]] = (n + row["n"], passed + row["passed"])
            series.append(row)
        if row["metric"] == TOOL_ERRORS.name:
            entry = judge.setdefault(
                row["status"], {"status": row["status"], "evaluations": 0, "cost_usd": 0.0, "models": set()}
            )
            entry["evaluations"] += row["n"]
            entry["cost_usd"] += row["cost"] or 0.0
            if row["model"]:
                entry["models"].add(row["model"])
    for entry in judge.values():
        entry["models"] = ", ".join(sorted(entry["models"]))
    departures: dict[str, dict[str, int]] = {}
    for row in _rows(departures_result):
        departures.setdefault(row["tool"], {})[row["kind"]] = row["n"]
    findings = sorted(_rows(findings_result), key=lambda r: (-r["runs"], r["error_type"], r["metric"]))
    _fill_series([agents[name] for name in top], _rows(counts_result), series, step)
    departures_metric = aligned if any(aligned in a.metrics for a in agents.values()) else None
    ranked = sorted(departures.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:12]
    tool_errors = _rows(tool_result)
    names = [row["agent"] for row in _rows(names_result)]
    return Overview(
        filters=f,
        now=now,
        bucket_seconds=step,
        agents=list(agents.values()),
        departures=ranked,
        departures_metric=departures_metric,
        tool_errors=tool_errors,
        findings=findings,
        judge=[judge[k] for k in sorted(judge)],
        total_runs=sum(a.runs for a in agents.values()),
        agent_names=names,
    )


# The overview's score figures, in three statements over the latest score of each run and metric. Each reads
# only the metrics it needs, and only the departures and findings read evaluation logs: one statement carrying
# them all needed more than the collector's DuckDB memory limit over 100,000 runs.
_EV = """{runs},
ev AS (SELECT r.agent, {bucket} AS bucket, e.* EXCLUDE (trace_id, run_span_id)
       FROM {latest} e JOIN runs r ON e.trace_id = r.trace_id AND e.run_span_id = r.span_id)
"""
_SCORES_SQL = (
    _EV
    + """SELECT agent, bucket, metric, status, CASE WHEN metric = ? THEN model END AS model, count(*) AS n,
       count(*) FILTER (WHERE success) AS passed, sum(cost_usd) AS cost
FROM ev GROUP BY ALL"""
)
# The lists are taken out of each log (one parse) before the join, so the join never carries logs; only runs
# that departed are kept for the unnesting.
_DEPARTURES_SQL = """{runs},
parts AS (SELECT e.trace_id, e.run_span_id, e.j FROM {latest} e WHERE e.status = 'ok'),
lists AS MATERIALIZED (
    SELECT CAST(p.j[1] AS VARCHAR[]) AS missing, CAST(p.j[2] AS VARCHAR[]) AS extra,
           json_extract_string(p.j[3], '$[*].name') AS out_of_order
    FROM parts p {in_selection}
    WHERE p.j[1] <> '[]' OR p.j[2] <> '[]' OR coalesce(p.j[3], '[]') <> '[]')
SELECT kind, tool, count(*) AS n FROM (
    SELECT 'missing' AS kind, unnest(missing) AS tool FROM lists
    UNION ALL SELECT 'extra', unnest(extra) FROM lists
    UNION ALL SELECT 'out of order', unnest(out_of_order) FROM lists)
WHERE tool IS NOT NULL GROUP BY ALL"""
_FINDINGS_SQL = (
    _EV
    + """SELECT metric, error_type, count(*) AS runs FROM (
    SELECT metric, unnest(json_extract_string(details, '$.error_types[*]')) AS error_type FROM ev
    WHERE status = 'ok' AND score > 0)
GROUP BY ALL"""
)


def _fill_series(
    agents: Sequence[AgentSummary],
    counts: Sequence[dict[str, Any]],
    rates: Sequence[dict[str, Any]],
    step: int,
) -> None:
    """Each charted agent's runs and pass rate per metric, per time bucket (the buckets any of them had runs
    in; a bucket is its start in milliseconds over ``step`` seconds)."""
    if not agents:
        return
    by_name = {a.name: a for a in agents}
    keys = sorted({row["bucket"] for row in counts})
    index = {key: k for k, key in enumerate(keys)}
    starts = [datetime.fromtimestamp(key * step, UTC) for key in keys]
    for a in agents:
        a.buckets = list(starts)
        a.runs_per_bucket = [0] * len(keys)
        a.rates = {m: [None] * len(keys) for m in sorted(a.metrics)}
    for row in counts:
        by_name[row["agent"]].runs_per_bucket[index[row["bucket"]]] = row["runs"]
    passed: dict[tuple[str, str, int], list[int]] = {}
    for row in rates:
        if row["agent"] in by_name and row["bucket"] in index:
            tally = passed.setdefault((row["agent"], row["metric"], index[row["bucket"]]), [0, 0])
            tally[0] += row["n"]
            tally[1] += row["passed"]
    for (name, metric, k), (n, ok) in passed.items():
        agent = by_name[name]
        if metric in agent.rates and n:
            agent.rates[metric][k] = ok / n


# ---- the runs table ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class RunsPage:
    filters: Filters
    runs: list[dict[str, Any]]  # agent_runs columns, plus "scores": [{metric, score, success, status}]
    total: int
    has_next: bool
    agents: list[str]
    services: list[str]
    metrics: list[str]


def _score_filter(read: Read, f: Filters) -> tuple[str, list[Any]]:
    """The runs-table condition on scores: a metric and/or pass / fail (fail: any metric failed)."""
    if not f.metric and not f.result:
        return "", []
    columns = "e.trace_id, e.run_span_id, e.success, e.status"
    only_own = only_own_scores(read)
    latest, params = (
        latest_evaluations("e.metric = ?", [f.metric], columns, only_own=only_own)
        if f.metric
        else latest_evaluations(columns=columns, only_own=only_own)
    )
    scored = f"SELECT e.trace_id, e.run_span_id, e.success FROM {latest} e WHERE e.status = 'ok'"
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
    score_clause, score_params = _score_filter(read, f)
    where += score_clause
    params += score_params
    offset = (f.page - 1) * PAGE_SIZE
    # The selection is made once: its count and the page's rows both come from it, and only the page's rows
    # are joined back for their columns.
    rows = _rows(
        read(
            f"WITH chosen AS MATERIALIZED (SELECT r.trace_id, r.span_id, r.start_time FROM agent_runs r "
            f"WHERE {where}), page AS (SELECT * FROM chosen ORDER BY start_time DESC, trace_id, span_id "
            f"LIMIT {PAGE_SIZE + 1} OFFSET {int(offset)}) "
            "SELECT t.total, r.trace_id, r.span_id, r.agent_name, r.service_name, r.start_time, r.end_time, "
            "r.status, r.tools_called, r.expected_tools, left(r.input, 240) AS input, r.tool_call_count, "
            "r.parent_run_span_id, CASE WHEN r.agent_name IS NULL AND json_exists(r.diagnostics, "
            "'$.no_agent_span') THEN json_object('no_agent_span', true) END AS diagnostics "
            "FROM (SELECT count(*) AS total FROM chosen) t LEFT JOIN (page p JOIN agent_runs r "
            "ON r.trace_id = p.trace_id AND r.span_id = p.span_id) ON TRUE "
            "ORDER BY r.start_time DESC, r.trace_id, r.span_id",
            params,
        )
    )
    total = rows[0]["total"]
    runs = [{k: v for k, v in row.items() if k != "total"} for row in rows if row["trace_id"] is not None]
    has_next = len(runs) > PAGE_SIZE
    runs = runs[:PAGE_SIZE]
    _attach_scores(read, runs)
    options: dict[str, list[str]] = {"agent": [], "service": [], "metric": []}
    for row in _rows(
        read(
            "SELECT * FROM (SELECT 'agent' AS kind, coalesce(agent_name, '(unnamed)') AS value FROM "
            "agent_runs GROUP BY 2 UNION ALL SELECT 'service', service_name FROM agent_runs WHERE "
            "service_name IS NOT NULL GROUP BY 2 UNION ALL SELECT 'metric', metric FROM evaluations GROUP "
            "BY 2) ORDER BY kind, value",
            [],
        )
    ):
        if len(options[row["kind"]]) < 500:
            options[row["kind"]].append(row["value"])
    agents, services, metrics = options["agent"], options["service"], options["metric"]
    return RunsPage(f, runs, total, has_next, agents, services, metrics)


def _attach_scores(read: Read, runs: list[dict[str, Any]]) -> None:
    """Each run's latest evaluations, as ``run["scores"]``."""
    for run in runs:
        run["scores"] = []
    if not runs:
        return
    traces = sorted({r["trace_id"] for r in runs})
    marks = ", ".join("?" for _ in traces)
    latest, params = latest_of_few(
        f"e.trace_id IN ({marks})",
        traces,
        "e.trace_id, e.run_span_id, e.metric, e.score, e.success, e.status, e.details",
    )
    rows = _rows(
        read(
            "SELECT e.trace_id, e.run_span_id, e.metric, e.score, e.success, e.status, "
            f"json_extract_string(e.details, '$.expected[*]') AS expected FROM {latest} e ORDER BY e.metric",
            params,
        )
    )
    by_run = {(r["trace_id"], r["span_id"]): r for r in runs}
    for row in rows:
        owner = by_run.get((row.pop("trace_id"), row.pop("run_span_id")))
        if owner is not None:
            owner["scores"].append(row)


# ---- one run -----------------------------------------------------------------------------------------------


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


def agent_shown(run: dict[str, Any]) -> str:
    """A run's agent as the pages name it: its name; "(no agent span)" for a run anchored on a model or tool
    call (no agent span arrived); else "(unnamed)"."""
    if run.get("agent_name"):
        return str(run["agent_name"])
    diagnostics = run.get("diagnostics")
    if isinstance(diagnostics, str):  # stored as JSON text
        diagnostics = _parsed(diagnostics)
    return (
        "(no agent span)"
        if isinstance(diagnostics, dict) and diagnostics.get("no_agent_span")
        else "(unnamed)"
    )


def read_run(read: Read, trace_id: str, span_id: str) -> RunDetail | None:
    trace_rows = _rows(read("SELECT * FROM agent_runs WHERE trace_id = ?", [trace_id]))
    run = next((r for r in trace_rows if r["span_id"] == span_id), None)
    if run is None:
        return None
    calls = _rows(
        read(
            "SELECT * FROM tool_calls WHERE trace_id = ? AND run_span_id = ? ORDER BY seq",
            [trace_id, span_id],
        )
    )
    latest, params = latest_of_few("e.trace_id = ? AND e.run_span_id = ?", [trace_id, span_id])
    evaluations = _rows(read(f"SELECT * FROM {latest} e ORDER BY e.metric", params))
    spans_result = read(
        "SELECT span_id, parent_span_id, name, kind, start_time_unix_nano, end_time_unix_nano, status_code, "
        # what a span does, as OpenInference and the GenAI conventions say it (every OpenInference span's OTLP
        # kind is "internal")
        "status_message, scope_name, attributes->>'openinference.span.kind' AS openinference_span_kind, "
        "attributes->>'gen_ai.operation.name' AS gen_ai_operation_name "
        f"FROM spans WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id "
        f"LIMIT {SPAN_LIMIT + 1}",
        [trace_id],
    )
    spans = _rows(spans_result)
    trace_runs = {r["span_id"]: agent_shown(r) for r in trace_rows}
    expected, source = _expected(run, evaluations)
    return RunDetail(
        run, calls, evaluations, spans[:SPAN_LIMIT], len(spans) > SPAN_LIMIT, trace_runs, expected, source
    )


def _expected(run: dict[str, Any], evaluations: Sequence[dict[str, Any]]) -> tuple[list[str] | None, str]:
    """The expected tools: those the tool-correctness score used (a rule or dataset may have supplied them),
    else the run's own."""
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
    row = _rows(
        read(
            "SELECT (SELECT count(*) FROM agent_runs) AS runs, (SELECT max(updated_at) FROM agent_runs) AS "
            "runs_at, (SELECT count(*) FROM evaluations) AS evaluations, "
            "(SELECT max(updated_at) FROM evaluations) AS evaluations_at",
            [],
        )
    )[0]
    return row


def read_worst(read: Read, f: Filters, limit: int, now: datetime | None = None) -> list[dict[str, Any]]:
    """The runs that failed the most metrics, lowest score first (rows as in ``read_runs``, with scores)."""
    now = now or datetime.now(UTC)
    where, params = _runs_where(f, now)
    latest, latest_params = latest_evaluations(
        columns="e.trace_id, e.run_span_id, e.success, e.score, e.status", only_own=only_own_scores(read)
    )
    runs = _rows(
        read(
            "WITH runs AS (SELECT r.* FROM agent_runs r WHERE " + where + "), "
            f"ev AS (SELECT e.trace_id, e.run_span_id, e.success, e.score FROM {latest} e SEMI JOIN runs r "
            "ON e.trace_id = r.trace_id AND e.run_span_id = r.span_id WHERE e.status = 'ok'), "
            "failing AS (SELECT trace_id, run_span_id, count(*) FILTER (WHERE NOT success) AS failed, "
            "min(score) AS lowest FROM ev GROUP BY ALL HAVING count(*) FILTER (WHERE NOT success) > 0) "
            "SELECT r.trace_id, r.span_id, r.agent_name, r.service_name, r.start_time, r.end_time, r.status, "
            f"r.tools_called, r.expected_tools, left(r.input, 240) AS input, r.tool_call_count, "
            f"r.parent_run_span_id FROM failing x JOIN runs r ON r.trace_id = x.trace_id AND r.span_id = "
            f"x.run_span_id ORDER BY x.failed DESC, x.lowest ASC NULLS LAST, r.start_time "
            f"DESC LIMIT {int(limit)}",
            [*params, *latest_params],
        )
    )
    _attach_scores(read, runs)
    return runs


# ---- a stored trace, for explain ---------------------------------------------------------------------------


def trace_ids_starting(read: Read, prefix: str, limit: int = 6) -> list[str]:
    """Up to ``limit`` stored trace ids that start with ``prefix``, in order (a range the
    zone maps can skip by)."""
    low, high = prefix_bounds(prefix)
    return [
        row["trace_id"]
        for row in _rows(
            read(
                "SELECT DISTINCT trace_id FROM spans WHERE trace_id BETWEEN ? AND ? "
                "ORDER BY trace_id LIMIT ?",
                [low, high, limit],
            )
        )
    ]


def read_trace(read: Read, trace_id: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A stored trace as ``explain`` prints it: its runs as ``agentotel_eval.reconstruct.explain.run_record``
    records (with their calls and their stored trajectory result), and the name of each of its spans (span id
    -> name, in start order). Both are empty when the trace is not stored."""
    runs = _rows(
        read(
            "SELECT span_id, agent_name, span_name, convention, status, error, input, output, "
            "parent_run_span_id, handoffs, diagnostics FROM agent_runs WHERE trace_id = ? "
            "ORDER BY start_time, span_id",
            [trace_id],
        )
    )
    calls = _rows(
        read(
            "SELECT run_span_id, seq, tool_name, arguments, result, status, error, span_id, sources "
            "FROM tool_calls WHERE trace_id = ? ORDER BY run_span_id, seq",
            [trace_id],
        )
    )
    spans = _rows(
        read("SELECT span_id, name FROM spans WHERE trace_id = ? ORDER BY start_time, span_id", [trace_id])
    )
    trajectories = {
        row["run_span_id"]: (_parsed(row["details"]) if row["status"] == "ok" else row["reason"])
        for row in _rows(
            read(
                "SELECT run_span_id, status, reason, details FROM evaluations WHERE "
                "trace_id = ? AND metric = ? AND status IN ('ok', 'error')",
                [trace_id, TRAJECTORY.name],
            )
        )
    }
    # the detectors' findings as scored (the judge's evaluation carries them too, under the same keys)
    tool_errors: dict[str, dict[str, Any]] = {}
    for row in _rows(
        read(
            "SELECT run_span_id, metric, details FROM evaluations WHERE trace_id = ? AND metric IN "
            "(?, ?) AND status = 'ok' ORDER BY metric DESC",
            [trace_id, TOOL_ERRORS_DETECTORS.name, TOOL_ERRORS.name],
        )
    ):
        details = _parsed(row["details"])
        if isinstance(details, dict) and row["run_span_id"] not in tool_errors:
            tool_errors[row["run_span_id"]] = {
                "detectors": details.get("detectors") or [],
                "could_not_run": details.get("could_not_run") or [],
                "informational": details.get("informational") or [],
            }
    by_run: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        by_run.setdefault(call["run_span_id"], []).append(
            {
                "name": call["tool_name"],
                "arguments": _parsed(call["arguments"]),
                "result": call["result"],
                "status": call["status"],
                "error": call["error"],
                "span_id": call["span_id"],
                "sources": _parsed(call["sources"]) or {},
            }
        )
    records = [
        {
            **row,
            "trace_id": trace_id,
            "handoffs": _parsed(row["handoffs"]) or [],
            "diagnostics": _parsed(row["diagnostics"]) or {},
            "calls": by_run.get(row["span_id"], []),
            "trajectory": trajectories.get(row["span_id"]),
            "tool_errors": tool_errors.get(row["span_id"]),
        }
        for row in runs
    ]
    return records, {s["span_id"]: s["name"] for s in spans}


def _parsed(value: Any) -> Any:
    """A JSON column's value: a collector answers it parsed, a file read gives its text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# ---- stored runs as test cases, for export-cases -----------------------------------------------------------

#: runs whose calls and scores are read in one statement
_CASES_BATCH = 200
_CASE_COLUMNS = (
    "trace_id",
    "span_id",
    "agent_name",
    "service_name",
    "input",
    "output",
    "start_time",
    "expected_tools",
    "status",
    "parent_run_span_id",
)


def read_stored_cases(read: Read, where: str, limit: int) -> Iterator[EvalTestCase]:
    """The test cases of the runs ``where`` (a condition on ``agent_runs``' columns) selects, oldest first, at
    most ``limit``: each run with its calls, the expected tools its scores used and the trajectory spec its
    trajectory score used (``stored_cases``)."""
    runs = _rows(
        read(
            f"SELECT {', '.join(_CASE_COLUMNS)} FROM agent_runs WHERE ({where}) "
            f"ORDER BY start_time, trace_id, span_id LIMIT {int(limit)}",
            [],
        )
    )
    for start in range(0, len(runs), _CASES_BATCH):
        batch = runs[start : start + _CASES_BATCH]
        keys = " OR ".join("(trace_id = ? AND run_span_id = ?)" for _ in batch)
        ids = [v for r in batch for v in (r["trace_id"], r["span_id"])]
        calls: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in _rows(
            read(f"SELECT * FROM tool_calls WHERE {keys} ORDER BY trace_id, run_span_id, seq", ids)
        ):
            calls.setdefault((row["trace_id"], row["run_span_id"]), []).append(row)
        metrics = ", ".join("?" for _ in ALIGNMENT_METRICS)
        of_batch = " OR ".join("(e.trace_id = ? AND e.run_span_id = ?)" for _ in batch)
        latest, params = latest_of_few(
            f"e.metric IN ({metrics}) AND ({of_batch})", [*ALIGNMENT_METRICS, *ids]
        )
        scores: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in _rows(
            read(
                "SELECT e.trace_id, e.run_span_id, e.metric, json_extract_string(e.details, '$.expected[*]') "
                f"AS expected, e.details->>'expectation' AS source FROM {latest} e WHERE e.status = 'ok' "
                "ORDER BY e.metric DESC",
                params,
            )
        ):  # tool_correctness_ordering before tool_correctness
            scores.setdefault((row["trace_id"], row["run_span_id"]), []).append(row)
        # the spec a trajectory score used, as written: the case file scores it again as it was
        latest, params = latest_of_few(f"e.metric = ? AND ({of_batch})", [TRAJECTORY.name, *ids])
        specs = {
            (row["trace_id"], row["run_span_id"]): (_parsed(row["spec"]), str(row["source"] or "score"))
            for row in _rows(
                read(
                    "SELECT e.trace_id, e.run_span_id, e.details->'spec' AS spec, "
                    f"e.details->>'expectation' AS source FROM {latest} e WHERE e.status = 'ok' "
                    "AND (e.details->'spec') IS NOT NULL",
                    params,
                )
            )
        }
        for run in batch:
            key = (run["trace_id"], run["span_id"])
            yield case_of(run, calls.get(key, []), expectations_of(run, scores.get(key, [])), specs.get(key))


# ---- scored runs, for compare ------------------------------------------------------------------------------

#: rows ``read_scored_runs`` reads in one statement: its ``read`` must return at least as many
SCORED_RUNS_PAGE = 10_000


def read_scored_runs(read: Read, selection: Selection) -> list[ScoredRun]:
    """Every latest ``ok`` score of the runs a ``compare`` SPEC selects, paged so no row
    limit cuts it short."""
    span_join = (
        "JOIN spans s ON s.trace_id = r.trace_id AND s.span_id = r.span_id " if selection.needs_span else ""
    )
    where = " AND ".join(selection.conditions) or "TRUE"
    latest, latest_params = latest_evaluations(
        columns="e.trace_id, e.run_span_id, e.metric, e.score, e.success, e.status, e.details",
        only_own=only_own_scores(read),
    )
    marks = ", ".join("?" for _ in ALIGNMENT_METRICS)
    sql = (
        f"WITH runs AS (SELECT r.trace_id, r.span_id, coalesce(r.agent_name, '(unnamed)') AS agent, "
        f"coalesce(r.input, '') AS input FROM agent_runs r {span_join}WHERE {where}) "
        "SELECT r.trace_id, r.span_id, r.agent, r.input, e.metric, e.score, e.success, "
        f"CASE WHEN e.metric IN ({marks}) THEN json_extract(e.details, ['$.missing', '$.extra', "
        f"'$.out_of_order']) END AS j FROM runs r JOIN {latest} e ON e.trace_id = r.trace_id "
        "AND e.run_span_id = r.span_id WHERE e.status = 'ok' ORDER BY r.trace_id, r.span_id, e.metric"
    )
    params = [*selection.params, *ALIGNMENT_METRICS, *latest_params]
    rows: list[ScoredRun] = []
    offset = 0
    while True:
        page = _rows(read(f"{sql} LIMIT {SCORED_RUNS_PAGE} OFFSET {offset}", params))
        for row in page:
            rows.append(
                ScoredRun(
                    row["agent"],
                    row["input"],
                    row["metric"],
                    row["score"],
                    bool(row["success"]),
                    f"{row['trace_id']}/{row['span_id']}",
                    departures(row["j"]),
                )
            )
        if len(page) < SCORED_RUNS_PAGE:
            return rows
        offset += SCORED_RUNS_PAGE
