"""Agreement figures per error type: precision, recall and F1 with 95% intervals, Cohen's kappa, and the gate.

Each case counts once per type: labelled with it or not, predicted or not. Precision and recall carry Wilson
score intervals (sound at 0 and 1, unlike the normal approximation); F1's interval is a percentile bootstrap
over cases with a fixed seed, so the same predictions print the same figures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

#: the gate a type must pass on the suites, else it is reported as experimental
GATE_PRECISION = 0.75
GATE_RECALL = 0.75
GATE_F1 = 0.80
GATE_MIN_POSITIVES = 10
_Z95 = 1.959963984540054
_BOOTSTRAP = 1000


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class TypeFigures:
    type: str
    tp: int
    fp: int
    fn: int
    tn: int
    precision: float | None
    recall: float | None
    f1: float | None
    kappa: float | None
    precision_ci: Interval | None
    recall_ci: Interval | None
    f1_ci: Interval | None

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def passes_gate(self) -> bool:
        return (
            self.positives >= GATE_MIN_POSITIVES
            and self.precision is not None
            and self.recall is not None
            and self.f1 is not None
            and self.precision > GATE_PRECISION
            and self.recall > GATE_RECALL
            and self.f1 > GATE_F1
        )

    @property
    def status(self) -> str:
        """``gated`` (passes the gate), ``experimental`` (misses it), or ``no positives``
        (nothing to measure)."""
        if self.passes_gate:
            return "gated"
        return "no positives" if self.positives == 0 else "experimental"


def wilson(successes: int, total: int) -> Interval | None:
    """The Wilson score interval of a proportion, 95%."""
    if total == 0:
        return None
    p = successes / total
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = _Z95 * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def f1_score(tp: int, fp: int, fn: int) -> float | None:
    return _ratio(2 * tp, 2 * tp + fp + fn)


def cohen_kappa(tp: int, fp: int, fn: int, tn: int) -> float | None:
    """Agreement between labels and predictions beyond chance; None when chance agreement is total."""
    n = tp + fp + fn + tn
    if n == 0:
        return None
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def _bootstrap_f1(pairs: Sequence[tuple[bool, bool]], seed: int) -> Interval | None:
    if not pairs or not any(label or predicted for label, predicted in pairs):
        return None
    rng = random.Random(seed)
    n = len(pairs)
    scores: list[float] = []
    for _ in range(_BOOTSTRAP):
        tp = fp = fn = 0
        for _ in range(n):
            label, predicted = pairs[rng.randrange(n)]
            tp += label and predicted
            fp += predicted and not label
            fn += label and not predicted
        score = f1_score(tp, fp, fn)
        scores.append(score if score is not None else 0.0)
    scores.sort()
    return Interval(scores[int(0.025 * (_BOOTSTRAP - 1))], scores[int(0.975 * (_BOOTSTRAP - 1))])


def figures(error_type: str, pairs: Sequence[tuple[bool, bool]], *, seed: int = 0) -> TypeFigures:
    """``pairs``: (labelled, predicted) per case for this type."""
    tp = sum(1 for label, predicted in pairs if label and predicted)
    fp = sum(1 for label, predicted in pairs if predicted and not label)
    fn = sum(1 for label, predicted in pairs if label and not predicted)
    tn = len(pairs) - tp - fp - fn
    return TypeFigures(
        error_type,
        tp,
        fp,
        fn,
        tn,
        _ratio(tp, tp + fp),
        _ratio(tp, tp + fn),
        f1_score(tp, fp, fn),
        cohen_kappa(tp, fp, fn, tn),
        wilson(tp, tp + fp),
        wilson(tp, tp + fn),
        _bootstrap_f1(pairs, seed),
    )
