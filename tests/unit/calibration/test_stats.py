"""The agreement figures against values computed by hand and published ones."""

import pytest

from agentotel_eval.calibration.stats import cohen_kappa, f1_score, figures, wilson


def test_wilson_interval_matches_the_published_values() -> None:
    low_high = wilson(8, 10)
    assert low_high is not None
    assert (round(low_high.low, 3), round(low_high.high, 3)) == (0.49, 0.943)
    zero = wilson(0, 10)
    assert zero is not None and zero.low == 0.0 and round(zero.high, 3) == 0.278
    assert wilson(0, 0) is None


def test_kappa_and_f1_by_hand() -> None:
    # 50 cases: observed agreement 0.7, chance agreement (25*30 + 25*20) / 50^2 = 0.5
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert f1_score(20, 5, 10) == pytest.approx(40 / 55)
    assert cohen_kappa(0, 0, 0, 10) is None  # every case negative on both sides: agreement by chance alone
    assert f1_score(0, 0, 0) is None


def test_figures_count_each_case_once_and_gate_needs_ten_positives() -> None:
    pairs = [(True, True)] * 9 + [(False, False)] * 20
    nine = figures("parameter_error", pairs)
    assert (nine.tp, nine.fp, nine.fn, nine.tn) == (9, 0, 0, 20)
    assert nine.precision == nine.recall == nine.f1 == 1.0
    assert nine.status == "experimental"  # perfect, but on nine positives
    ten = figures("parameter_error", [*pairs, (True, True)])
    assert ten.status == "gated"
    assert figures("x", [(False, False)] * 5).status == "no positives"
    noisy = figures(
        "x", [(True, True)] * 12 + [(False, True)] * 5 + [(True, False)] * 2 + [(False, False)] * 30
    )
    assert (
        noisy.precision == pytest.approx(12 / 17) and noisy.status == "experimental"
    )  # precision 0.71 < 0.75
    assert noisy.f1_ci is not None and noisy.f1_ci.low < noisy.f1 < noisy.f1_ci.high  # type: ignore[operator]
    assert figures("x", pairs, seed=3).f1_ci == figures("x", pairs, seed=3).f1_ci
