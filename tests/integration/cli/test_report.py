"""``agentotel-eval report``: one self-contained HTML file, from a database file or through
a running collector."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from tests.support.ui_data import DEMO_RUNS, cli

#: anything that would make the file fetch something: a script, stylesheet, font, image or
#: frame from elsewhere
EXTERNAL = re.compile(
    r"""<(script|img|iframe|link|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=\s*["']?(?!#)"""
    r"""|url\(\s*["']?(?!#)|@import|\bsrc\s*=\s*["']?(https?:)?//|xlink:href\s*=\s*["']?(?!#)""",
    re.IGNORECASE,
)


def test_the_report_holds_everything_it_shows(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "report.html"
    done = cli("report", "--db", str(demo_db), "--since", "all", "--out", str(out))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert f"wrote {out}" in done.stdout and f"{DEMO_RUNS} runs" in done.stdout
    assert EXTERNAL.search(html) is None, EXTERNAL.search(html)
    assert re.findall(r'href="([^"]*)"', html) and all(
        h.startswith("#") for h in re.findall(r'href="([^"]*)"', html)
    )
    assert "<style>" in html and "<script>" in html and "data-poll" not in html
    # the worst runs, each with its timeline: the wrong tool, the missing call, the extra
    # call, the failing tool
    sections = re.findall(r'<article class="run" id="run-([0-9a-f]{32})-([0-9a-f]{16})">', html)
    assert len(sections) == 4
    assert html.count('<svg class="alignment"') == 4
    assert 'data-row="expected" data-kind="missing" data-index="2" data-tool="book_hotel"' in html
    assert 'data-row="called" data-kind="extra" data-index="0" data-tool="search_flights"' in html
    # the worst first: the wrong tool scores 0 on every tool-correctness mode
    first = html.index('<article class="run"')
    assert "Is it sunny in Madrid today?" in html[first : html.index("</article>", first)]


def test_one_agent_and_an_empty_range(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "trip.html"
    done = cli("report", "--db", str(demo_db), "--since", "all", "--agent", "trip_planner", "--out", str(out))
    assert done.returncode == 0 and "3 runs, 1 worst runs" in done.stdout
    assert "weather_assistant" not in out.read_text()
    done = cli("report", "--db", str(demo_db), "--since", "all", "--agent", "nobody", "--out", str(out))
    assert done.returncode == 0 and "0 runs" in done.stdout
    assert "No agent runs in this range yet" in out.read_text()


def test_since_takes_any_duration(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "recent.html"
    with duckdb.connect(str(demo_db), read_only=True) as con:
        recent = con.execute("SELECT count(*) FROM agent_runs WHERE start_time >= now() - INTERVAL 90 MINUTE")
        expected = recent.fetchone()[0]  # type: ignore[index]
    done = cli("report", "--db", str(demo_db), "--since", "1.5h", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"{expected:,} runs" in done.stdout


def test_through_a_running_collector(ui_collector: Any, tmp_path: Path) -> None:
    out = tmp_path / "live.html"
    done = cli("report", "--db", str(ui_collector.db_path), "--since", "all", "--out", str(out))
    assert done.returncode == 0, done.stderr
    total = ui_collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
    assert f"{total:,} runs" in done.stdout
    assert f'<div class="tile-value">{total:,}</div><div class="tile-label">runs</div>' in out.read_text()


def test_bad_arguments_are_refused_and_nothing_is_written(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "never.html"
    done = cli("report", "--db", str(demo_db), "--since", "last week", "--out", str(out))
    assert done.returncode == 2 and "unknown time range 'last week'" in done.stderr
    done = cli("report", "--db", str(tmp_path / "missing.duckdb"), "--out", str(out))
    assert done.returncode == 2 and "no database at" in done.stderr
    assert not out.exists()
    blocked = tmp_path / "file"
    blocked.write_text("")
    done = cli("report", "--db", str(demo_db), "--out", str(blocked / "report.html"))
    assert done.returncode == 2 and "cannot write" in done.stderr
