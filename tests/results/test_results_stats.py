"""Statistics helpers: exact small cases."""

import math

import pytest

from memarena.results.stats import friedman, holm, mean_std, wilcoxon_paired


def test_mean_std_over_seeds():
    # mean (0.4 + 0.6) / 2; sample std sqrt((0.1^2 + 0.1^2) / 1)
    mean, std, n = mean_std([0.4, 0.6])
    assert (mean, n) == (pytest.approx(0.5), 2) and std == pytest.approx(math.sqrt(0.02))
    mean, std, n = mean_std([0.3, float("nan")])  # NaN (a missing run) is left out
    assert mean == 0.3 and math.isnan(std) and n == 1
    assert mean_std([])[2] == 0


def test_wilcoxon_paired():
    a = [0.9, 0.8, 0.85, 0.7, 0.95, 0.6]
    b = [0.5, 0.6, 0.55, 0.4, 0.65, 0.3]
    stat, p = wilcoxon_paired(a, b)
    # all 6 differences positive: W- = 0, exact two-sided p = 2 / 2^6 = 0.03125
    assert stat == 0.0 and p == pytest.approx(0.03125)
    assert wilcoxon_paired([1, 2], [1, 2]) == (0.0, 1.0)


def test_friedman_and_holm():
    # three methods on four units, always ranked the same: ranks sum 4, 8, 12
    # chi2 = 12 / (n k (k+1)) * sum R^2 - 3 n (k+1) = 12/48 * 224 - 48 = 8
    stat, p = friedman([1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6])
    assert stat == pytest.approx(8.0) and p == pytest.approx(math.exp(-4.0))  # chi2(2) tail
    with pytest.raises(ValueError, match="at least 3"):
        friedman([1, 2], [2, 3])
    # Holm: sorted p 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    reject, adj = holm([0.04, 0.01, 0.03], alpha=0.05)
    assert adj == pytest.approx([0.06, 0.03, 0.06]) and reject == [False, True, False]
