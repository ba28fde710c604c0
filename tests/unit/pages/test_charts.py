"""The SVG charts are well-formed, draw what they are given, and escape labels."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from agentotel_eval.pages.charts import legend, pass_rate_chart, stacked_bars

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    # str(): the charts are Markup, whose replace() would escape the namespace put in
    return ET.fromstring(str(svg).replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_pass_rate_chart_draws_a_bar_per_bucket_and_a_dot_per_scored_bucket() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    buckets = [start + timedelta(hours=h) for h in range(4)]
    svg = parse(pass_rate_chart(buckets, [3, 0, 5, 1], {"tool_correctness": [1.0, None, 0.4, 0.0],
                                                        "a<b>": [0.5, None, None, 1.0]}, title="t"))
    assert len(svg.findall(f".//{SVG}rect[@class='runs-bar']")) == 4
    assert len(svg.findall(f".//{SVG}circle")) == 5
    assert len(svg.findall(f".//{SVG}polyline")) == 2
    names = ET.fromstring(legend(["tool_correctness", "a<b>"]))  # escaped in the markup, the text intact
    assert [li.find("svg/rect").get("class") for li in names] == ["series-0", "series-1"]  # type: ignore[union-attr]
    assert "".join(names[1].itertext()).strip() == "a<b>"


def test_empty_charts_say_so() -> None:
    assert "no runs in this range" in pass_rate_chart([], [], {}, title="t")
    assert "nothing to show" in stacked_bars([], ("missing",), title="t")


def test_stacked_bars_stack_by_kind_with_totals() -> None:
    svg = parse(stacked_bars([("book_hotel", {"missing": 3, "out of order": 1}), ("get_weather", {"extra": 2})],
                             ("missing", "extra", "out of order"), title="t"))
    rects = [r for r in svg.iter(f"{SVG}rect") if "swatch" not in r.get("class", "")]
    assert [r.get("class") for r in rects] == ["kind-missing", "kind-out_of_order", "kind-extra"]
    widths = [float(r.get("width", 0)) for r in rects]
    assert widths[0] == 3 * widths[1]  # one scale for every bar
    assert [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "axis"] == ["4", "2"]


def test_a_metric_keeps_its_colour_on_every_chart() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    buckets = [start, start + timedelta(hours=1)]
    colours = {"tool_correctness": 0, "tool_errors_detectors": 3}
    alone = parse(pass_rate_chart(buckets, [1, 1], {"tool_errors_detectors": [1.0, 1.0]}, title="t", colours=colours))
    assert {p.get("class") for p in alone.iter(f"{SVG}polyline")} == {"line series-3"}
    assert 'class="series-3"' in legend(["tool_errors_detectors"], colours)
