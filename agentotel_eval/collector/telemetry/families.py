"""Metric families for the components' Prometheus collectors (``prometheus_client``), built at scrape time
from their plain counters: nothing is counted per span, and a labelled family with no sample yet shows its
zero, so a dashboard finds every series from the first scrape."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

PREFIX = "agentotel_"

#: (label values, value) pairs of one family
Samples = Iterable[tuple[Sequence[str], float]]


def counter(
    name: str,
    doc: str,
    value: float | Samples,
    *,
    labels: Sequence[str] = (),
    empty: Sequence[str] | None = None,
) -> CounterMetricFamily:
    """A counter named ``agentotel_<name>`` (``_total`` added): one value, or samples over ``labels``, with
    the ``empty`` label values at 0 when there are none."""
    family = CounterMetricFamily(PREFIX + name, doc, labels=labels or None)
    _fill(family, value, empty)
    return family


def gauge(
    name: str,
    doc: str,
    value: float | Samples,
    *,
    labels: Sequence[str] = (),
    empty: Sequence[str] | None = None,
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(PREFIX + name, doc, labels=labels or None)
    _fill(family, value, empty)
    return family


def histogram(
    name: str, doc: str, bounds: Sequence[float], counts: Sequence[int], total: float, count: int
) -> HistogramMetricFamily:
    """A histogram from per-bucket counts (``counts[i]`` observations up to ``bounds[i]``, the last one above
    them all): Prometheus's buckets are cumulative."""
    cumulative, buckets = 0, []
    for bound, n in zip(bounds, counts, strict=False):
        cumulative += n
        buckets.append((f"{bound:g}", cumulative))
    buckets.append(("+Inf", count))
    return HistogramMetricFamily(PREFIX + name, doc, buckets=buckets, sum_value=total)


def by_key(counts: Mapping[str, float]) -> Samples:
    """Samples of a one-label family from a mapping, in a stable order."""
    return [((key,), value) for key, value in sorted(counts.items())]


def _fill(
    family: CounterMetricFamily | GaugeMetricFamily, value: float | Samples, empty: Sequence[str] | None
) -> None:
    if isinstance(value, int | float):
        family.add_metric([], value)
        return
    samples = list(value)
    if not samples and empty is not None:
        samples = [(empty, 0)]
    for labels, number in samples:
        family.add_metric(list(labels), number)
