"""Charts as inline SVG: drawn on the server, so a page needs no script to show them and the report file stays
self-contained. Colours come from the stylesheet's classes (``series-0`` ... ``series-7``, ``kind-*``).

A chart is hundreds of coordinates and a few labels, so it is written here rather than in a template, where
each number would be escaped in turn (two and a half times as slow): numbers are formatted here and every text
is escaped, and the chart is ``Markup`` for the templates to place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape

from markupsafe import Markup

SERIES = 8  # colour classes in the stylesheet
#: each series' marker, by its colour number: with its colour and its offset in the bucket,
#: equal values stay apart
SHAPES = ("circle", "square", "diamond", "triangle")
FEW = 2  # buckets up to which the chart marks its points and counts without bars


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _label_time(moment: datetime, fine: bool) -> str:
    """Digits and separators only: nothing in it to escape."""
    return moment.strftime("%m-%d %H:%M" if fine else "%m-%d")


def marker(shape: str, x: float, y: float, attributes: str, inner: str = "") -> str:
    """A point's marker centred on (x, y), about 9 px across: a circle, square, diamond or triangle."""
    if shape == "square":
        return (
            f'<rect {attributes} x="{_num(x - 3.5)}" y="{_num(y - 3.5)}" width="7" height="7">{inner}</rect>'
        )
    if shape in ("diamond", "triangle"):
        d = (
            f"M{_num(x)},{_num(y - 5)}L{_num(x + 5)},{_num(y)}"
            f"L{_num(x)},{_num(y + 5)}L{_num(x - 5)},{_num(y)}Z"
            if shape == "diamond"
            else f"M{_num(x)},{_num(y - 5)}L{_num(x + 5)},{_num(y + 4)}L{_num(x - 5)},{_num(y + 4)}Z"
        )
        return f'<path {attributes} d="{d}">{inner}</path>'
    return f'<circle {attributes} cx="{_num(x)}" cy="{_num(y)}" r="4">{inner}</circle>'


def pass_rate_chart(
    buckets: Sequence[datetime],
    runs: Sequence[int],
    rates: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    width: int = 560,
    height: int = 190,
    fine: bool = False,
    colours: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Markup:
    """Runs per time bucket as bars, and one line per metric of its pass rate (0..1, None: no scored run).
    ``colours``: each metric's series number, so a metric has one colour and marker on every chart of a page;
    ``labels``: each metric's name to show. A metric's points sit a few pixels apart from the other metrics'
    in the same bucket, so equal rates do not hide each other. With one or two buckets there are no bars to
    read: each bucket is marked on the axis with its time and its runs."""
    few = len(buckets) <= FEW
    left, right, top, bottom = 34, 10, 12, (36 if few else 22)
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(buckets)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for k, frac in enumerate((0.0, 0.5, 1.0)):
        y = top + plot_h * (1 - frac)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{_num(y)}" y2="{_num(y)}"/>'
            f'<text class="axis" x="{left - 4}" y="{_num(y + 3)}" text-anchor="end">{(0, 50, 100)[k]}%</text>'
        )
    parts.append(
        f'<line class="axis-line" x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}"/>'
        f'<line class="axis-line" x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}"/>'
    )
    if n == 0:
        parts.append(
            f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no runs in this '
            "range</text></svg>"
        )
        return Markup("".join(parts))  # numbers, and the title escaped
    step = plot_w / n
    peak = max(runs) or 1
    for k, (moment, count) in enumerate(zip(buckets, runs, strict=True)):
        centre = left + (k + 0.5) * step
        if few:  # a tick and the bucket's time and runs under it
            parts.append(
                f'<line class="tick" x1="{_num(centre)}" x2="{_num(centre)}" y1="{top + plot_h}" '
                f'y2="{top + plot_h + 4}"/>'
                f'<text class="axis" x="{_num(centre)}" y="{top + plot_h + 15}" text-anchor="middle">'
                f"{_label_time(moment, fine)}</text>"
                f'<text class="axis runs-count" x="{_num(centre)}" y="{top + plot_h + 28}" '
                f'text-anchor="middle">{count:,} run{"" if count == 1 else "s"}</text>'
            )
            continue
        bar_h = plot_h * 0.9 * count / peak
        bar_w = min(max(step * 0.8, 1), 28)
        parts.append(
            f'<rect class="runs-bar" x="{_num(centre - bar_w / 2)}" '
            f'y="{_num(top + plot_h - bar_h)}" width="{_num(bar_w)}" height="{_num(bar_h)}">'
            f"<title>{_label_time(moment, fine)}: {count} runs</title></rect>"
        )
    # the metrics' points side by side in their bucket: no wider than the bucket, 9 px apart at most
    gap = min(9.0, step * 0.6 / max(len(rates), 1))
    dots: list[str] = []  # drawn after every line: no line crosses a point
    for s, (metric, values) in enumerate(rates.items()):
        number = (colours or {}).get(metric, s)
        cls = f"series-{number % SERIES}"
        shape = SHAPES[number % len(SHAPES)]
        name = escape((labels or {}).get(metric, metric))
        offset = (s - (len(rates) - 1) / 2) * gap
        points = [
            (left + (k + 0.5) * step + offset, top + plot_h * (1 - v), k, v)
            for k, v in enumerate(values)
            if v is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{_num(x)},{_num(y)}" for x, y, _, _ in points)
            parts.append(f'<polyline class="line {cls} dash-{number % 4}" points="{path}"/>')
        attributes = f'class="dot {cls}" data-metric="{escape(metric)}"'
        dots.extend(
            marker(
                shape,
                x,
                y,
                attributes,
                f"<title>{name}: {v:.0%} passed ({_label_time(buckets[k], fine)})</title>",
            )
            for x, y, k, v in points
        )
    parts.extend(dots)
    if not few:
        labels_at = {0, n - 1} | ({n // 2} if n > 2 else set())
        for k in sorted(labels_at):
            anchor = "start" if k == 0 else "end" if k == n - 1 else "middle"
            x = (
                left + k * step
                if anchor == "start"
                else left + (k + 1) * step
                if anchor == "end"
                else left + (k + 0.5) * step
            )
            parts.append(
                f'<text class="axis" x="{_num(x)}" y="{top + plot_h + 13}" '
                f'text-anchor="{anchor}">{_label_time(buckets[k], fine)}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers, and every text escaped


def legend(
    names: Sequence[str],
    colours: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> Markup:
    """The series of a ``pass_rate_chart`` as HTML (it wraps where an SVG legend would overflow): each
    metric's marker, its label (``labels``, else its name) and a note after it (``notes``:
    its latest rate, say)."""
    items = []
    for s, name in enumerate(names):
        number = (colours or {}).get(name, s)
        mark = marker(SHAPES[number % len(SHAPES)], 6, 6, f'class="series-{number % SERIES}"')
        note = (notes or {}).get(name)
        items.append(
            f'<li data-metric="{escape(name)}"><svg width="12" height="12" aria-hidden="true">{mark}</svg> '
            f"{escape((labels or {}).get(name, name))}"
            + (f' <span class="legend-note">{escape(note)}</span>' if note else "")
            + "</li>"
        )
    return Markup('<ul class="legend">' + "".join(items) + "</ul>")  # numbers, and every text escaped


def stacked_bars(
    rows: Sequence[tuple[str, Mapping[str, int]]],
    kinds: Sequence[str],
    *,
    title: str,
    width: int = 560,
    bar_height: int = 16,
) -> Markup:
    """Horizontal bars, one per label, stacked by kind (``kind-<kind>`` classes), with
    the total at the end."""
    label_w, gap = 150, 6
    height = max(1, len(rows)) * (bar_height + gap) + 26
    plot_w = width - label_w - 50
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    if not rows:
        parts.append(
            f'<text class="empty" x="{width / 2}" y="16" text-anchor="middle">nothing to show</text></svg>'
        )
        return Markup("".join(parts))  # numbers, and the title escaped
    peak = max(sum(counts.values()) for _, counts in rows) or 1
    for r, (label, counts) in enumerate(rows):
        y = r * (bar_height + gap)
        short = label if len(label) <= 22 else label[:21] + "…"
        parts.append(
            f'<text class="label" x="{label_w - 6}" y="{y + bar_height - 4}" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(short)}</text>"
        )
        x = float(label_w)
        for kind in kinds:
            count = counts.get(kind, 0)
            if not count:
                continue
            w = plot_w * count / peak
            parts.append(
                f'<rect class="kind-{escape(kind.replace(" ", "_"))}" x="{_num(x)}" y="{y}" '
                f'width="{_num(max(w, 1))}" height="{bar_height}"><title>{escape(label)}: {count} '
                f"{escape(kind)}</title></rect>"
            )
            x += w
        parts.append(
            f'<text class="axis" x="{_num(x + 4)}" y="{y + bar_height - 4}">{sum(counts.values())}</text>'
        )
    y = len(rows) * (bar_height + gap) + 6
    x = label_w
    for kind in kinds:
        parts.append(
            f'<rect class="swatch kind-{escape(kind.replace(" ", "_"))}" x="{x}" y="{y}" width="9" '
            f'height="9"/><text class="legend" x="{x + 12}" y="{y + 8}">{escape(kind)}</text>'
        )
        x += 24 + 6.2 * len(kind)
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers, and every text escaped
