"""The web UI served by a real collector: what each page shows agrees with SQL over the same database, filters
narrow the runs, a run's timeline marks its missing, extra and out-of-order calls, and bad input gets a clear
answer. (The same pages in a real browser: tests/browser.)"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.collector_harness import http_request, post_otlp, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.ui_data import with_new_trace_ids


class Tree(HTMLParser):
    """Every start tag with its attributes, and the text inside elements with an id or a class."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        def ok(have: dict[str, str]) -> bool:
            for key, want in attrs.items():
                key = key.rstrip("_").replace("_", "-")
                if key == "class":
                    if want not in have.get("class", "").split():
                        return False
                elif have.get(key) != want:
                    return False
            return True

        return [a for t, a in self.tags if t == tag and ok(a)]


def get(collector: Any, path: str) -> tuple[int, dict[str, str], str]:
    answer = http_request(collector.http_endpoint, "GET", path)
    return answer.status, answer.headers, answer.body.decode()


def page(collector: Any, path: str) -> Tree:
    status, headers, body = get(collector, path)
    assert status == 200, body[:500]
    assert headers["content-type"] == "text/html; charset=utf-8"
    return Tree(body)


def sql(collector: Any, query: str, *params: Any) -> list[list[Any]]:
    return collector.query(query, params=params)["rows"]


def run_of(collector: Any, text: str) -> tuple[str, str]:
    [(trace_id, span_id)] = sql(collector, "SELECT trace_id, span_id FROM agent_runs WHERE input = ?", text)
    return trace_id, span_id


def runs_shown(tree: Tree) -> list[tuple[str, str]]:
    return [(a["data-trace"], a["data-span"]) for a in tree.find("tr") if "data-trace" in a]


def test_every_page_is_html_of_its_own_with_no_outside_reference(ui_collector: Any) -> None:
    trace_id, span_id = run_of(ui_collector, "Find me a flight and a hotel in Oslo, and book it.")
    for path in ("/", "/?since=all", "/runs", "/runs?since=all&result=fail", f"/runs/{trace_id}/{span_id}"):
        status, headers, body = get(ui_collector, path)
        assert status == 200, path
        assert "default-src 'self'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        for tag, attrs in Tree(body).tags:
            for key in ("src", "href", "action"):
                assert not re.match(r"^\s*(https?:)?//", attrs.get(key, "")), (path, tag, attrs)
            assert "style" not in attrs or tag == "svg", (path, tag, attrs)  # the policy forbids inline style
        assert '<link rel="stylesheet" href="/static/style.css">' in body
    for asset, kind in (("/static/style.css", "text/css"), ("/static/app.js", "text/javascript")):
        status, headers, body = get(ui_collector, asset)
        assert status == 200 and headers["content-type"].startswith(kind) and len(body) > 500


def test_overview_agrees_with_sql(ui_collector: Any) -> None:
    tree = page(ui_collector, "/?since=all")
    _, _, body = get(ui_collector, "/?since=all")
    total = sql(ui_collector, "SELECT count(*) FROM agent_runs")[0][0]
    assert re.search(rf'<div class="tile-value">{total:,}</div><div class="tile-label">runs</div>', body)
    agents = sql(ui_collector, "SELECT count(DISTINCT coalesce(agent_name, '(unnamed)')) FROM agent_runs")[0][
        0
    ]
    assert f'<div class="tile-value">{agents:,}</div><div class="tile-label">agents</div>' in body
    # a chart per busiest agent, each with its runs drawn
    assert len(tree.find("svg", class_="chart")) >= 6
    assert tree.find("rect", class_="runs-bar")
    # the demo's runs: book_hotel missing (Oslo) and out of order (Rome), search_flights and get_weather extra
    assert re.search(r"<title>book_hotel: 1 missing</title>", body)
    assert re.search(r"<title>book_hotel: 1 out of order</title>", body)
    assert re.search(r"<title>search_flights: 1 extra</title>", body)
    # tool-call errors per tool, as SQL counts them
    errors = sql(
        ui_collector, "SELECT count(*) FROM tool_calls WHERE tool_name = 'get_weather' AND status = 'error'"
    )
    assert re.search(
        rf"<td>get_weather</td><td class=num>[\d,]+</td><td class=num>{errors[0][0]:,}</td>", body
    )
    # the detectors' findings by type
    assert re.search(r"<td>repeated_failure</td><td>detectors</td><td class=num>\d+</td>", body)


def test_overview_of_one_agent_and_a_time_range(ui_collector: Any) -> None:
    _, _, body = get(ui_collector, "/?since=all&agent=trip_planner")
    assert '<div class="tile-value">3</div><div class="tile-label">runs</div>' in body
    assert '<a class="range" aria-current="true" href="/?agent=trip_planner&amp;since=all">' in body
    # the demo ran just now, the fixtures days ago: the last hour holds the demo's runs at most
    recent = sql(ui_collector, "SELECT count(*) FROM agent_runs WHERE start_time >= now() - INTERVAL 1 HOUR")[
        0
    ][0]
    _, _, body = get(ui_collector, "/?since=1h")
    assert f'<div class="tile-value">{recent:,}</div><div class="tile-label">runs</div>' in body
    # any duration of the one grammar the commands' --since reads
    recent = sql(
        ui_collector, "SELECT count(*) FROM agent_runs WHERE start_time >= now() - INTERVAL 90 MINUTE"
    )[0][0]
    _, _, body = get(ui_collector, "/?since=1.5h")
    assert f'<div class="tile-value">{recent:,}</div><div class="tile-label">runs</div>' in body


def test_filters_narrow_the_runs_table(ui_collector: Any) -> None:
    everything = page(ui_collector, "/runs?since=all")
    total = sql(ui_collector, "SELECT count(*) FROM agent_runs")[0][0]
    assert everything.find("p", id="runs-count")[0]["data-total"] == str(total)

    weather = page(ui_collector, "/runs?since=all&agent=weather_assistant")
    theirs = {
        tuple(r)
        for r in sql(
            ui_collector, "SELECT trace_id, span_id FROM agent_runs WHERE agent_name = 'weather_assistant'"
        )
    }
    assert 3 <= len(theirs) < total
    assert weather.find("p", id="runs-count")[0]["data-total"] == str(len(theirs))
    assert set(runs_shown(weather)) == theirs

    failing = page(ui_collector, "/runs?since=all&metric=tool_correctness_exact&result=fail")
    expected = {
        tuple(r)
        for r in sql(
            ui_collector,
            "SELECT trace_id, run_span_id FROM latest_evaluations "
            "WHERE metric = 'tool_correctness_exact' AND NOT success",
        )
    }
    assert expected and set(runs_shown(failing)) == expected

    passing = set(runs_shown(page(ui_collector, "/runs?since=all&agent=trip_planner&result=pass")))
    assert passing == {
        tuple(r)
        for r in sql(
            ui_collector,
            "SELECT trace_id, run_span_id FROM run_evaluations WHERE agent_name = 'trip_planner' "
            "AND status = 'ok' GROUP BY ALL HAVING bool_and(success)",
        )
    }
    assert (
        run_of(ui_collector, "Plan a weekend in Lisbon: a flight, then book the cheapest hotel.") in passing
    )
    assert run_of(ui_collector, "Find me a flight and a hotel in Oslo, and book it.") not in passing
    text = page(ui_collector, "/runs?since=all&q=atlantis")
    assert run_of(ui_collector, "What's the weather in Atlantis?") in runs_shown(text)
    # the short trace id the pages and pytest's messages show finds that trace's runs
    trace_id, _ = run_of(ui_collector, "What's the weather in Atlantis?")
    by_id = runs_shown(page(ui_collector, f"/runs?since=all&q={trace_id[:8].upper()}"))
    assert {t for t, _ in by_id} == {trace_id}
    assert runs_shown(page(ui_collector, f"/runs?since=all&q={trace_id}")) == by_id
    service = page(ui_collector, "/runs?since=all&service=demo-travel-agents")
    assert service.find("p", id="runs-count")[0]["data-total"] == "8"
    assert (
        page(ui_collector, "/runs?since=all&agent=no-such-agent").find("p", id="runs-count")[0]["data-total"]
        == "0"
    )


def test_paging_walks_every_run_once_newest_first(ui_collector: Any) -> None:
    total = sql(ui_collector, "SELECT count(*) FROM agent_runs")[0][0]
    assert total > 100
    seen: list[tuple[str, str]] = []
    path: str | None = "/runs?since=all"
    while path:
        tree = page(ui_collector, path)
        rows = runs_shown(tree)
        assert 0 < len(rows) <= 50
        seen += rows
        following = tree.find("a", rel="next")
        path = following[0]["href"] if following else None
    assert len(seen) == len(set(seen)) == total
    newest = sql(
        ui_collector, "SELECT trace_id, span_id FROM agent_runs ORDER BY start_time DESC, trace_id, span_id"
    )
    assert seen == [tuple(r) for r in newest]


def cells(tree: Tree, row: str) -> list[dict[str, str]]:
    return tree.find("g", data_row=row)


def test_a_run_page_draws_its_alignment(ui_collector: Any) -> None:
    trace_id, span_id = run_of(ui_collector, "Find me a flight and a hotel in Oslo, and book it.")
    tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
    assert [(c["data-tool"], c["data-kind"]) for c in cells(tree, "expected")] == [
        ("search_flights", "matched"),
        ("search_hotels", "matched"),
        ("book_hotel", "missing"),
    ]
    assert [(c["data-tool"], c["data-kind"]) for c in cells(tree, "called")] == [
        ("search_flights", "matched"),
        ("search_hotels", "matched"),
    ]
    summary = tree.find("p", class_="summary")[0]
    assert (summary["data-matched"], summary["data-missing"], summary["data-extra"]) == ("2", "1", "0")
    assert [r["data-metric"] for r in tree.find("tr") if "data-metric" in r] == [
        "tool_correctness",
        "tool_correctness_exact",
        "tool_correctness_ordering",
        "tool_errors_detectors",
    ]
    assert tree.find("button", data_copy=trace_id)
    assert len(tree.find("details", class_="call")) == 2

    trace_id, span_id = run_of(ui_collector, "Plan a trip to Rome and book a hotel there.")
    tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
    assert [(c["data-tool"], c["data-kind"]) for c in cells(tree, "called")] == [
        ("search_flights", "matched"),
        ("book_hotel", "out_of_order"),
        ("search_hotels", "matched"),
    ]

    trace_id, span_id = run_of(ui_collector, "Is it sunny in Madrid today?")
    tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
    assert [(c["data-tool"], c["data-kind"]) for c in tree.find("g", class_="cell")] == [
        ("get_weather", "missing"),
        ("search_flights", "extra"),
    ]

    trace_id, span_id = run_of(ui_collector, "What's the weather in Atlantis?")
    _, _, body = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    tree = Tree(body)
    assert [c.get("data-error") for c in cells(tree, "called")] == ["true", "true"]
    assert "ValueError: unknown city: Atlantis" in body
    assert "<b>repeated_failure/same_arguments</b>" in body  # the detectors' finding, under its evaluation
    assert 'title="one tool failing two or more times in a row' in body  # what its rule looks for
    assert '<span class="chip">this run</span>' in body


def test_every_stored_run_has_a_page(ui_collector: Any) -> None:
    """Runs of every recorded framework render: diagnostics, handoffs, nested runs, missing fields and all."""
    runs = sql(ui_collector, "SELECT trace_id, span_id, tool_call_count FROM agent_runs")
    assert len(runs) > 140
    for trace_id, span_id, calls in runs:
        tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
        assert len(tree.find("details", class_="call")) == calls
        assert tree.find("section", id="spans")


def test_a_run_page_says_what_the_detectors_could_not_check(ui_collector: Any) -> None:
    rows = sql(
        ui_collector,
        "SELECT trace_id, run_span_id, details FROM evaluations WHERE metric = "
        "'tool_errors_detectors' AND status = 'ok'",
    )
    unchecked = [(t, s, json.loads(d) if isinstance(d, str) else d) for t, s, d in rows]
    unchecked = [(t, s, d["could_not_run"]) for t, s, d in unchecked if d.get("could_not_run")]
    assert unchecked  # names-only and content-off fixtures record no arguments or results
    trace_id, span_id, notes = unchecked[0]
    tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
    (shown,) = tree.find("ul", class_="unchecked")
    _, _, body = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    for note in notes:
        assert f"<li>{note}</li>" in body.replace("&#39;", "'")
    assert shown


def test_a_run_page_shows_observations_apart_from_the_findings(ui_collector: Any) -> None:
    rows = sql(
        ui_collector,
        "SELECT trace_id, run_span_id, details, success FROM evaluations WHERE metric = "
        "'tool_errors_detectors' AND status = 'ok'",
    )
    parsed = [(t, s, json.loads(d) if isinstance(d, str) else d, ok) for t, s, d, ok in rows]
    observed = [(t, s, d, ok) for t, s, d, ok in parsed if d.get("informational")]
    assert observed  # a recorded run whose answer leaves a result out
    trace_id, span_id, details, success = observed[0]
    assert success and details["detected"] is False  # an observation never fails a run
    tree = page(ui_collector, f"/runs/{trace_id}/{span_id}")
    assert len(tree.find("ul", class_="observed")) == 1
    _, _, body = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    for note in details["informational"]:
        assert f"<li>note: {note['description']}</li>" in body.replace("&#39;", "'")


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/?since=yesterday", 400, "unknown time range"),
        ("/runs?page=0", 400, "page must be"),
        ("/runs/not-hex/123", 400, "Bad run address"),
        ("/runs/" + "0" * 32 + "/" + "0" * 16, 404, "No agent run is stored"),
        ("/nowhere", 404, "no route for GET /nowhere"),
    ],
)
def test_bad_addresses_get_clear_answers(ui_collector: Any, path: str, status: int, says: str) -> None:
    answer_status, _, body = get(ui_collector, path)
    assert answer_status == status and says in body


def test_pages_only_answer_get(ui_collector: Any) -> None:
    answer = http_request(ui_collector.http_endpoint, "POST", "/runs", b"x", {"Content-Length": "1"})
    assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"


def test_the_polled_version_moves_when_a_run_arrives(ui_collector: Any) -> None:
    status, _, body = get(ui_collector, "/api/runs/latest")
    before = json.loads(body)
    assert status == 200 and before["runs"] == sql(ui_collector, "SELECT count(*) FROM agent_runs")[0][0]
    tree = page(ui_collector, "/runs")
    assert tree.find("body")[0]["data-version"] == before["version"]
    assert tree.find("body")[0]["data-poll"] == "/api/runs/latest"
    fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
    post_otlp(ui_collector.http_endpoint, "traces", with_new_trace_ids(fx.body("protobuf")))
    after = wait_until(
        lambda: (v := json.loads(get(ui_collector, "/api/runs/latest")[2]))["runs"] > before["runs"] and v,
        timeout=30,
        what="the new run in the polled version",
    )
    assert after["version"] != before["version"]


def test_query_parameters_are_bound_not_quoted(ui_collector: Any) -> None:
    body = json.dumps(
        {"sql": "SELECT count(*) FROM agent_runs WHERE agent_name = ?", "params": ["weather_assistant"]}
    ).encode()
    answer = http_request(
        ui_collector.http_endpoint, "POST", "/v1/query", body, {"Content-Type": "application/json"}
    )
    literal = sql(ui_collector, "SELECT count(*) FROM agent_runs WHERE agent_name = 'weather_assistant'")
    assert answer.status == 200 and json.loads(answer.body)["rows"] == literal != [[0]]
    injected = json.dumps(
        {"sql": "SELECT count(*) FROM agent_runs WHERE agent_name = ?", "params": ["x' OR '1'='1"]}
    ).encode()
    answer = http_request(
        ui_collector.http_endpoint, "POST", "/v1/query", injected, {"Content-Type": "application/json"}
    )
    assert json.loads(answer.body)["rows"] == [[0]]
    for params in ({"a": 1}, [[1]], "text"):
        bad = json.dumps({"sql": "SELECT ?", "params": params}).encode()
        answer = http_request(
            ui_collector.http_endpoint, "POST", "/v1/query", bad, {"Content-Type": "application/json"}
        )
        error = json.loads(answer.body)["error"]
        assert answer.status == 400 and ("'params'" in error or "parameters must be" in error), error


def test_a_run_address_is_case_and_escape_tolerant(ui_collector: Any) -> None:
    trace_id, span_id = run_of(ui_collector, "What's the weather in Paris?")
    status, _, _ = get(ui_collector, f"/runs/{quote(trace_id.upper())}/{span_id}")
    assert status == 200


def test_every_score_is_named_in_full_with_its_direction(ui_collector: Any) -> None:
    """No abbreviation, and nothing a reader must look up: each metric by its label, which way is good, what
    it measures; the count of runs that ended in error is not mistaken for a score."""
    from agentotel_eval.metrics.registry import metric_label

    metrics = [m for (m,) in sql(ui_collector, "SELECT DISTINCT metric FROM evaluations ORDER BY metric")]
    assert {"tool_correctness_exact", "tool_errors_detectors"} <= set(metrics)
    tree = page(ui_collector, "/?since=all")
    _, _, body = get(ui_collector, "/?since=all")
    assert ">failed runs<" not in body and ">runs ended in error</th>" in body
    assert [h["data-metric"] for h in tree.find("th") if "data-metric" in h] == metrics
    assert '>Tool correctness (exact set)<div class="sub">pass rate ↑</div></th>' in body
    # the legend: every metric of the table, with its direction
    legend = [d["data-metric"] for d in tree.find("div") if "data-metric" in d]
    assert legend == metrics
    assert re.search(
        r"<dt>Tool-use errors \(detectors\) <span class=\"direction\">↓ lower is better</span>", body
    )
    assert re.search(
        r"<dt>Tool correctness \(exact set\) <span class=\"direction\">↑ higher is better</span>", body
    )
    # the runs table's chips: full names, the score's direction; the legend one click away
    _, _, runs = get(ui_collector, "/runs?since=all")
    assert not re.search(r'title="[^"]*">(tc|tc_\w+|errors) ', runs)  # the chips' old abbreviations
    assert re.search(
        r'data-metric="tool_correctness_exact" title="[^"]*order is NOT checked[^"]*">'
        r'Tool correctness \(exact set\) <span class="value">\d\.\d\d ↑</span>',
        runs,
    )
    assert re.search(
        r'data-metric="tool_errors_detectors" title="[^"]*lower is better[^"]*">Tool-use errors '
        r'\(detectors\) <span class="value">(no error found|errors found)</span>',
        runs,
    )
    assert '<details class="metric-legend">' in runs
    # a run's evaluations: the label, the stored name, the direction beside the score and the threshold's side
    # (the detectors' verdict is found or not: it passes on no error, not on a threshold)
    trace_id, span_id = run_of(ui_collector, "What's the weather in Atlantis?")
    _, _, run = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    errors = metric_label("tool_errors_detectors")
    assert re.search(
        r'<td class="metric" title="[^"]*">Tool-use errors \(detectors\)<div class="muted"><code>'
        r'tool_errors_detectors</code> · <span class="direction">↓ lower is better</span>',
        run,
    )
    assert re.search(
        r'<td class="num nowrap" title="lower is better">1\.00 <span class="direction" '
        r'aria-label="lower is better">↓</span></td><td class="num nowrap">no error found</td>',
        run,
    )
    assert re.search(r'<td class="num nowrap">≥ 0\.\d\d</td>', run) and errors.passes in run


def test_the_span_tree_shows_what_each_span_does(ui_collector: Any) -> None:
    """An OpenInference span is "internal" to OTLP: the tree shows its openinference.span.kind (LLM, tool,
    ...); a GenAI span its gen_ai.operation.name."""
    [(trace_id,)] = sql(
        ui_collector,
        "SELECT trace_id FROM spans WHERE attributes->>'openinference.span.kind' = "
        "'LLM' GROUP BY trace_id ORDER BY trace_id LIMIT 1",
    )
    [(span_id,)] = sql(
        ui_collector, "SELECT span_id FROM agent_runs WHERE trace_id = ? ORDER BY span_id LIMIT 1", trace_id
    )
    _, _, body = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    kinds = re.findall(r'<td class="muted kind" title="([^"]*)">([^<]*)</td>', body)
    wanted = sql(
        ui_collector, "SELECT attributes->>'openinference.span.kind' FROM spans WHERE trace_id = ?", trace_id
    )
    assert len(kinds) == len(wanted) and "LLM" in [k for _, k in kinds]
    assert all(k != "internal" for title, k in kinds if title.startswith("openinference.span.kind"))
    assert sum(title.startswith("openinference.span.kind") for title, _ in kinds) == sum(
        1 for (w,) in wanted if w
    )
    trace_id, span_id = run_of(ui_collector, "What's the weather in Atlantis?")  # the demo: GenAI spans
    _, _, body = get(ui_collector, f"/runs/{trace_id}/{span_id}")
    kinds = re.findall(r'<td class="muted kind" title="([^"]*)">([^<]*)</td>', body)
    assert {k for _, k in kinds} >= {"invoke_agent", "chat", "execute_tool"}


def test_a_run_whose_agent_span_was_dropped_is_marked_not_named_after_its_model_call(tmp_path) -> None:
    """An exporter that dropped the agent span leaves a run anchored on its LLM call: the pages say "(no agent
    span)" rather than showing an agent called "chat m"."""
    import time

    from agentotel_eval.otlp.encode import encode_traces
    from tests.support.collector_harness import running_collector
    from tests.unit.reconstruct.test_rules import agent, chat, tool

    t0 = time.time_ns()
    root = agent("travel", t0, t0 + 100)  # dropped: never sent
    asked = chat(t0 + 1, t0 + 9, root, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    ran = tool("get_weather", t0 + 10, t0 + 20, root, args={"city": "Rome"}, call_id="c1", result="sunny")
    with running_collector(tmp_path / "dropped.duckdb") as collector:
        assert (
            post_otlp(
                collector.http_endpoint, "traces", encode_traces([asked, ran]).SerializeToString()
            ).status
            == 200
        )
        wait_until(lambda: sql(collector, "SELECT count(*) FROM agent_runs")[0][0] == 1, what="the run")
        assert sql(collector, "SELECT agent_name FROM agent_runs") == [[None]]
        listed = get(collector, "/runs?since=all")[2]
        shown = get(collector, f"/runs/{asked.trace_id}/{asked.span_id}")[2]
    assert "(no agent span)" in listed and "chat m" not in listed.split("runs-count")[-1].split("</table>")[0]
    assert "(no agent span)" in shown
