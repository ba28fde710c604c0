"""Charts as inline SVG: drawn on the server, so a page needs no script to show them and the report file stays
self-contained. Colours come from the stylesheet's classes (``series-0`` ... ``series-7``, ``kind-*``).

A chart is hundreds of coordinates and a few labels, so it is written here rather than in a template, where each
number would be escaped in turn (two and a half times as slow): numbers are formatted here and every text is
escaped, and the chart is ``Markup`` for the templates to place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape

from markupsafe import Markup

SERIES = 8  # colour classes in the stylesheet


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _label_time(moment: datetime, fine: bool) -> str:
    """Digits and separators only: nothing in it to escape."""
    return moment.strftime("%m-%d %H:%M" if fine else "%m-%d")


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
) -> Markup:
    """Runs per time bucket as bars, and one line per metric of its pass rate (0..1, None: no scored run).
    ``colours``: each metric's series number, so a metric has one colour on every chart of a page."""
    left, right, top, bottom = 34, 10, 12, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(buckets)
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for k, frac in enumerate((0.0, 0.5, 1.0)):
        y = top + plot_h * (1 - frac)
        parts.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{_num(y)}" y2="{_num(y)}"/>'
                     f'<text class="axis" x="{left - 4}" y="{_num(y + 3)}" text-anchor="end">{(0, 50, 100)[k]}%</text>')
    if n == 0:
        parts.append(f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no runs in this '
                     "range</text></svg>")
        return Markup("".join(parts))  # numbers, and the title escaped
    step = plot_w / n
    peak = max(runs) or 1
    for k, (moment, count) in enumerate(zip(buckets, runs, strict=True)):
        bar_h = plot_h * 0.9 * count / peak
        parts.append(f'<rect class="runs-bar" x="{_num(left + k * step + step * 0.1)}" '
                     f'y="{_num(top + plot_h - bar_h)}" width="{_num(max(step * 0.8, 1))}" height="{_num(bar_h)}">'
                     f"<title>{_label_time(moment, fine)}: {count} runs</title></rect>")
    for s, (metric, values) in enumerate(rates.items()):
        points = [(left + (k + 0.5) * step, top + plot_h * (1 - v)) for k, v in enumerate(values) if v is not None]
        cls = f"series-{(colours or {}).get(metric, s) % SERIES}"
        name = escape(metric)
        if len(points) > 1:
            path = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
            parts.append(f'<polyline class="line {cls}" points="{path}"/>')
        for (x, y), v in zip(points, [v for v in values if v is not None], strict=True):
            parts.append(f'<circle class="dot {cls}" cx="{_num(x)}" cy="{_num(y)}" r="2.5">'
                         f"<title>{name}: {v:.0%}</title></circle>")
    labels = {0, n - 1} | ({n // 2} if n > 2 else set())
    for k in sorted(labels):
        anchor = "start" if k == 0 and n > 1 else "end" if k == n - 1 and n > 1 else "middle"
        x = left + k * step if anchor == "start" else left + (k + 1) * step if anchor == "end" else left + (k + .5) * step
        parts.append(f'<text class="axis" x="{_num(x)}" y="{top + plot_h + 13}" '
                     f'text-anchor="{anchor}">{_label_time(buckets[k], fine)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers, and every text escaped


def legend(names: Sequence[str], colours: Mapping[str, int] | None = None) -> Markup:
    """The series of a ``pass_rate_chart`` as HTML (it wraps where an SVG legend would overflow)."""
    return Markup('<ul class="legend">' + "".join(  # numbers, and the names escaped
        f'<li><svg width="10" height="10" aria-hidden="true"><rect class="series-{(colours or {}).get(name, s) % SERIES}" '
        f'width="10" height="10"/></svg> {escape(name)}</li>' for s, name in enumerate(names)) + "</ul>")


def stacked_bars(
    rows: Sequence[tuple[str, Mapping[str, int]]],
    kinds: Sequence[str],
    *,
    title: str,
    width: int = 560,
    bar_height: int = 16,
) -> Markup:
    """Horizontal bars, one per label, stacked by kind (``kind-<kind>`` classes), with the total at the end."""
    label_w, gap = 150, 6
    height = max(1, len(rows)) * (bar_height + gap) + 26
    plot_w = width - label_w - 50
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    if not rows:
        parts.append(f'<text class="empty" x="{width / 2}" y="16" text-anchor="middle">nothing to show</text></svg>')
        return Markup("".join(parts))  # numbers, and the title escaped
    peak = max(sum(counts.values()) for _, counts in rows) or 1
    for r, (label, counts) in enumerate(rows):
        y = r * (bar_height + gap)
        short = label if len(label) <= 22 else label[:21] + "…"
        parts.append(f'<text class="label" x="{label_w - 6}" y="{y + bar_height - 4}" text-anchor="end">'
                     f"<title>{escape(label)}</title>{escape(short)}</text>")
        x = float(label_w)
        for kind in kinds:
            count = counts.get(kind, 0)
            if not count:
                continue
            w = plot_w * count / peak
            parts.append(f'<rect class="kind-{escape(kind.replace(" ", "_"))}" x="{_num(x)}" y="{y}" '
                         f'width="{_num(max(w, 1))}" height="{bar_height}"><title>{escape(label)}: {count} '
                         f"{escape(kind)}</title></rect>")
            x += w
        parts.append(f'<text class="axis" x="{_num(x + 4)}" y="{y + bar_height - 4}">{sum(counts.values())}</text>')
    y = len(rows) * (bar_height + gap) + 6
    x = label_w
    for kind in kinds:
        parts.append(f'<rect class="swatch kind-{escape(kind.replace(" ", "_"))}" x="{x}" y="{y}" width="9" '
                     f'height="9"/><text class="legend" x="{x + 12}" y="{y + 8}">{escape(kind)}</text>')
        x += 24 + 6.2 * len(kind)
    parts.append("</svg>")
    return Markup("".join(parts))  # numbers, and every text escaped
