"""The SVG charts are well-formed, draw what they are given, and escape labels."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from agentotel_eval.pages.charts import SHAPES, legend, pass_rate_chart, stacked_bars

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    # str(): the charts are Markup, whose replace() would escape the namespace put in
    return ET.fromstring(str(svg).replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def test_pass_rate_chart_draws_a_bar_per_bucket_and_a_dot_per_scored_bucket() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    buckets = [start + timedelta(hours=h) for h in range(4)]
    svg = parse(
        pass_rate_chart(
            buckets,
            [3, 0, 5, 1],
            {"tool_correctness": [1.0, None, 0.4, 0.0], "a<b>": [0.5, None, None, 1.0]},
            title="t",
        )
    )
    assert len(svg.findall(f".//{SVG}rect[@class='runs-bar']")) == 4
    assert len(dots(svg)) == 5
    assert len(svg.findall(f".//{SVG}polyline")) == 2
    names = ET.fromstring(legend(["tool_correctness", "a<b>"]))  # escaped in the markup, the text intact
    assert [li.find("svg/*").get("class") for li in names] == ["series-0", "series-1"]  # type: ignore[union-attr]
    assert [li.find("svg/*").tag for li in names] == ["circle", "rect"]  # type: ignore[union-attr]
    assert "".join(names[1].itertext()).strip() == "a<b>"


def dots(svg: ET.Element) -> list[ET.Element]:
    return [e for e in svg.iter() if "dot" in e.get("class", "").split()]


def centre(dot: ET.Element) -> tuple[float, float]:
    if dot.tag == f"{SVG}circle":
        return float(dot.get("cx", 0)), float(dot.get("cy", 0))
    if dot.tag == f"{SVG}rect":
        return float(dot.get("x", 0)) + 3.5, float(dot.get("y", 0)) + 3.5
    first = dot.get("d", "")[1:].split("L")[0]  # a diamond's or triangle's top corner: its centre's x
    return float(first.split(",")[0]), float(first.split(",")[1]) + 5


def test_a_chart_of_one_or_two_buckets_marks_points_on_an_axis_without_bars() -> None:
    start = datetime(2026, 12, 1, 9, tzinfo=UTC)
    for buckets, runs in (([start], [7]), ([start, start + timedelta(hours=6)], [7, 1])):
        svg = parse(
            pass_rate_chart(buckets, runs, {"tool_correctness": [1.0] * len(runs)}, title="t", fine=True)
        )
        assert not svg.findall(f".//{SVG}rect[@class='runs-bar']")  # no bar as wide as the chart
        assert len(svg.findall(f".//{SVG}line[@class='axis-line']")) == 2
        assert len(svg.findall(f".//{SVG}line[@class='tick']")) == len(runs)
        axis = [t.text for t in svg.iter(f"{SVG}text") if "axis" in t.get("class", "")]
        assert "12-01 09:00" in axis and "7 runs" in axis and "0%" in axis and "100%" in axis
        assert len(dots(svg)) == len(runs)
    two = [
        t.text
        for t in parse(
            pass_rate_chart([start, start + timedelta(hours=6)], [7, 1], {}, title="t", fine=True)
        ).iter(f"{SVG}text")
    ]
    assert "12-01 15:00" in two and "1 run" in two


def test_many_buckets_draw_bars_no_wider_than_a_bar() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    svg = parse(
        pass_rate_chart(
            [start + timedelta(hours=h) for h in range(3)],
            [1, 2, 3],
            {"tool_correctness": [1.0, 0.5, 0.0]},
            title="t",
        )
    )
    bars = svg.findall(f".//{SVG}rect[@class='runs-bar']")
    assert len(bars) == 3 and all(float(b.get("width", 0)) <= 28 for b in bars)


def test_equal_rates_of_different_metrics_do_not_hide_each_other() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    metrics = [
        "tool_correctness",
        "tool_correctness_exact",
        "tool_correctness_ordering",
        "tool_errors_detectors",
    ]
    for n in (1, 2, 12):
        buckets = [start + timedelta(hours=h) for h in range(n)]
        svg = parse(
            pass_rate_chart(
                buckets,
                [1] * n,
                {m: [1.0] * n for m in metrics},
                title="t",
                colours={m: k for k, m in enumerate(metrics)},
                labels={"tool_correctness": "Tool correctness"},
            )
        )
        found = dots(svg)
        assert len(found) == 4 * n
        centres = [centre(d) for d in found]
        assert len(set(centres)) == len(centres)  # no two points in one place
        first_bucket = sorted(c[0] for c in centres)[:4]
        assert min(b - a for a, b in itertools.pairwise(first_bucket)) >= min(4.0, 300 / n / 8)
        assert {d.tag.removeprefix(SVG) for d in found} == {"circle", "rect", "path"}  # a shape per metric
        assert {d.get("data-metric") for d in found} == set(metrics)
        titles = [d.find(f"{SVG}title").text for d in found if d.get("data-metric") == "tool_correctness"]
        assert titles and all(t.startswith("Tool correctness: 100% passed") for t in titles)  # type: ignore[union-attr]
    assert len(SHAPES) == 4


def test_empty_charts_say_so() -> None:
    assert "no runs in this range" in pass_rate_chart([], [], {}, title="t")
    assert "nothing to show" in stacked_bars([], ("missing",), title="t")


def test_stacked_bars_stack_by_kind_with_totals() -> None:
    svg = parse(
        stacked_bars(
            [("book_hotel", {"missing": 3, "out of order": 1}), ("get_weather", {"extra": 2})],
            ("missing", "extra", "out of order"),
            title="t",
        )
    )
    rects = [r for r in svg.iter(f"{SVG}rect") if "swatch" not in r.get("class", "")]
    assert [r.get("class") for r in rects] == ["kind-missing", "kind-out_of_order", "kind-extra"]
    widths = [float(r.get("width", 0)) for r in rects]
    assert widths[0] == 3 * widths[1]  # one scale for every bar
    assert [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "axis"] == ["4", "2"]


def test_a_metric_keeps_its_colour_on_every_chart() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    buckets = [start, start + timedelta(hours=1)]
    colours = {"tool_correctness": 0, "tool_errors_detectors": 3}
    alone = parse(
        pass_rate_chart(buckets, [1, 1], {"tool_errors_detectors": [1.0, 1.0]}, title="t", colours=colours)
    )
    assert {p.get("class") for p in alone.iter(f"{SVG}polyline")} == {"line series-3 dash-3"}
    assert 'class="series-3"' in legend(["tool_errors_detectors"], colours)


def test_the_legend_shows_labels_and_notes() -> None:
    items = ET.fromstring(
        legend(
            ["tool_correctness_exact"],
            {"tool_correctness_exact": 1},
            {"tool_correctness_exact": "Tool correctness (exact set)"},
            {"tool_correctness_exact": "latest 50% passed"},
        )
    )
    assert items[0].get("data-metric") == "tool_correctness_exact"
    assert "".join(items[0].itertext()).strip() == "Tool correctness (exact set) latest 50% passed"
