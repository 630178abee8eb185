"""Appendix H statistics of MemCo on small hand-computed examples."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare, wilcoxon

from memarena.results.stats import (
    appendix_h,
    average_ranks,
    friedman_iman_davenport,
    holm,
    rank_biserial,
    wilcoxon_exact,
)

# 5 blocks x 3 methods, higher is better. Ranks per block:
# b1 (3,2,1) -> 1,2,3; b2 (5,4,4) -> 1,2.5,2.5; b3 (2,3,1) -> 2,1,3; b4 (9,8,7) -> 1,2,3;
# b5 (6,6,6) -> 2,2,2. Averages: A 7/5, B 9.5/5, C 13.5/5.
TABLE = pd.DataFrame(
    {"A": [3, 5, 2, 9, 6], "B": [2, 4, 3, 8, 6], "C": [1, 4, 1, 7, 6]},
    index=[f"b{i}" for i in range(1, 6)],
)


def test_average_ranks_average_ties():
    assert average_ranks(TABLE, True).tolist() == pytest.approx([1.4, 1.9, 2.7])
    # lower is better reverses each block: 4 - rank
    assert average_ranks(TABLE, False).tolist() == pytest.approx([2.6, 2.1, 1.3])


def test_friedman_tie_correction_and_iman_davenport():
    res = friedman_iman_davenport(TABLE, True)
    # chi2_F = 12*5/(3*4) * (1.96 + 3.61 + 7.29 - 12) = 4.3
    assert res["chi2_uncorrected"] == pytest.approx(4.3)
    # C = 1 - ((2^3-2) + (3^3-3)) / (5 * (3^3-3)) = 1 - 30/120
    assert res["C"] == pytest.approx(0.75)
    assert res["chi2"] == pytest.approx(4.3 / 0.75)
    # F_F = 4 * 5.7333 / (10 - 5.7333) = 5.375, df (2, 8); for df1 = 2 the F survival
    # function is (1 + 2F/8)^-4
    assert res["F_F"] == pytest.approx(5.375)
    assert (res["df1"], res["df2"]) == (2, 8)
    assert res["p"] == pytest.approx((1 + 2 * 5.375 / 8) ** -4)
    # scipy applies the same tie correction
    assert res["chi2"] == pytest.approx(friedmanchisquare(*[TABLE[c] for c in TABLE]).statistic)


def test_friedman_without_ties_has_c_one():
    t = pd.DataFrame({"A": [3, 3, 1], "B": [2, 1, 2], "C": [1, 2, 3]})
    assert friedman_iman_davenport(t, True)["C"] == 1.0


def test_paper_tie_correction_value():
    # 12 blocks x 6 methods with three pairwise ties: C = 1 - 3*6/(12*210) = 0.992857
    rng = np.random.default_rng(0)
    t = pd.DataFrame(rng.permuted(np.tile(np.arange(6.0), (12, 1)), axis=1))
    for i in range(3):
        t.iloc[i, 1] = t.iloc[i, 0]
    assert round(friedman_iman_davenport(t, True)["C"], 4) == 0.9929


def test_wilcoxon_exact_hand_example():
    res = wilcoxon_exact([1, -2, 3, 4, 5])
    # ranks 1..5; T- = 2; sums <= 2: {}, {1}, {2} -> p = 2 * 3/32
    assert (res["T_plus"], res["T_minus"], res["T"], res["n"]) == (13, 2, 2, 5)
    assert res["p"] == pytest.approx(0.1875)
    assert rank_biserial(res["T_plus"], res["T_minus"]) == pytest.approx(11 / 15)


def test_wilcoxon_exact_ties_and_zeros():
    res = wilcoxon_exact([1, -1, 2, 0, 3])
    # zero dropped; |d| ranks 1.5, 1.5, 3, 4; T- = 1.5; 3 of 16 assignments have
    # T+ <= 1.5 and 3 have T- <= 1.5
    assert (res["T_plus"], res["T_minus"], res["T"], res["n"]) == (8.5, 1.5, 1.5, 4)
    assert res["p"] == pytest.approx(6 / 16)
    assert wilcoxon_exact([0, 0])["p"] == 1.0


def test_wilcoxon_exact_matches_scipy_without_ties():
    rng = np.random.default_rng(1)
    for _ in range(100):
        n = int(rng.integers(1, 16))
        d = rng.permutation(np.arange(1, n + 1)) * rng.choice([-1, 1], n) + rng.uniform(0, 0.4, n)
        assert wilcoxon_exact(d)["p"] == pytest.approx(
            wilcoxon(d, method="exact").pvalue, abs=1e-12
        )


def test_rank_biserial_edge():
    assert rank_biserial(72, 6) == pytest.approx(66 / 78)
    assert math.isnan(rank_biserial(0, 0))


def test_holm_known_values():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.04*1, 0.06) = 0.06
    reject, adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert reject == [True, False, False, True]


def test_appendix_h_tables():
    steps = -TABLE  # fewer steps is better: same ordering as the accuracy table
    h = appendix_h(TABLE, steps, control="A")
    ranks = h["ranks"]
    assert list(ranks.index) == ["A", "B", "C"]
    assert ranks.loc["A", "avg_rank_combined"] == pytest.approx(1.4)
    assert h["omnibus"].loc["steps", "C"] == pytest.approx(0.75)
    paired = h["paired"].set_index(["baseline", "metric"])
    # A - B: 1, 1, -1, 1, 0 -> ranks 2.5 each: T+ 7.5, T- 2.5, p = 10/16
    ab = paired.loc[("B", "accuracy")]
    assert (ab["wins"], ab["losses"], ab["ties"]) == (3, 1, 1)
    assert (ab["T_plus"], ab["T_minus"], ab["p"]) == (7.5, 2.5, 0.625)
    # A - C: 2, 1, 1, 2, 0 -> T- = 0, p = 2/16
    ac = paired.loc[("C", "steps")]
    assert (ac["T_plus"], ac["T_minus"], ac["p"], ac["r_rb"]) == (10, 0, 0.125, 1.0)
    # Holm jointly over the 4 comparisons: 0.125*4 = 0.5, 0.625*2 -> 1
    assert paired["p_holm"].tolist() == pytest.approx([1.0, 0.5, 1.0, 0.5])


def test_appendix_h_accuracy_only_and_bad_control():
    h = appendix_h(TABLE, None, control="A")
    assert list(h["omnibus"].index) == ["accuracy"] and len(h["paired"]) == 2
    with pytest.raises(ValueError, match="control"):
        appendix_h(TABLE, None, control="memco")
