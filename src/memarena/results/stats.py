"""Small statistics helpers for comparing methods across seeds and tasks.

- :func:`mean_std`: mean ± sample standard deviation over seeds (std is NaN for one seed);
- :func:`wilson_ci`: Wilson score interval of a success rate;
- :func:`wilson_ci_over_units`: the same with a cluster of episodes (a task) as the unit;
- :func:`wilcoxon_paired`: paired Wilcoxon signed-rank test (two methods on the same units);
- :func:`friedman`: Friedman test (three or more methods on the same units);
- :func:`holm`: Holm correction of a family of p-values.

Cross-setting analysis of MemCo's Appendix H (Demšar 2006), on a blocks x methods table:

- :func:`average_ranks`: average within-block ranks (rank 1 = best, ties get their average);
- :func:`friedman_iman_davenport`: tie-corrected Friedman chi2 (Eq. 34-35) and the
  Iman-Davenport F (Eq. 36);
- :func:`wilcoxon_exact`: exact two-sided Wilcoxon signed-rank test by counting every sign
  assignment of the nonzero absolute-difference ranks (Eq. 39), ties averaged;
- :func:`rank_biserial`: matched-pairs rank-biserial correlation (Eq. 41);
- :func:`appendix_h`: the three tables (average ranks, omnibus tests, paired comparisons of
  a control against each baseline with Holm correction over all method x metric pairs).

"Units" are whatever the comparison pairs: seeds, tasks, or (env, seed) cells. Each helper
returns plain floats/lists so a notebook can put them straight into a DataFrame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, sample std with ddof=1, n) of the non-NaN values; std is NaN when n < 2."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        return math.nan, math.nan, 0
    std = float(arr.std(ddof=1)) if n > 1 else math.nan
    return float(arr.mean()), std, n


def wilson_ci(successes: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` at level ``1 - alpha`` (``successes`` may be
    a sum of per-unit means: :func:`wilson_ci_over_units`)."""
    if n <= 0:
        raise ValueError(f"wilson_ci: n must be positive, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"wilson_ci: successes must lie in [0, n], got {successes} of {n}")
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(low), float(high)


def wilson_ci_over_units(unit_means: Sequence[float], alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a success rate whose sampled unit is a cluster of episodes (a
    task, seen by several agent views, runs or repetitions): each unit counts once, with its
    mean success in [0, 1] (``n`` = units, successes = the sum of the means).

    Episodes of one task are not independent draws, so an interval over episodes is too
    narrow (4 views x 2 tasks are 2 samples, not 8). With one episode per unit this is
    :func:`wilson_ci` over the episodes; when every episode of a unit agrees it is the
    interval of the units alone; when they disagree it is wider than the design effect needs
    (a unit's mean varies less than a single Bernoulli draw): conservative, never narrower
    than the data allow."""
    means = [float(m) for m in unit_means]
    if not means:
        raise ValueError("wilson_ci_over_units: no units")
    if any(not 0.0 <= m <= 1.0 for m in means):
        raise ValueError(f"wilson_ci_over_units: unit means must lie in [0, 1], got {means}")
    return wilson_ci(math.fsum(means), len(means), alpha)


def wilcoxon_paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided paired Wilcoxon signed-rank test of ``a`` against ``b``: (statistic, p-value).

    Pairs with equal values carry no information (scipy's default ``zero_method="wilcox"``
    drops them); when every pair is equal the test has nothing to reject, so p = 1.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"wilcoxon_paired: need two 1-d samples of equal length, got "
                         f"{x.shape} and {y.shape}")
    if np.all(x == y):
        return 0.0, 1.0
    from scipy.stats import wilcoxon

    res = wilcoxon(x, y)
    return float(res.statistic), float(res.pvalue)


def friedman(*groups: Sequence[float]) -> tuple[float, float]:
    """Friedman test over >= 3 methods measured on the same units: (statistic, p-value)."""
    if len(groups) < 3:
        raise ValueError(f"friedman: needs at least 3 methods, got {len(groups)}; "
                         "use wilcoxon_paired for two")
    lengths = {len(g) for g in groups}
    if len(lengths) != 1:
        raise ValueError(f"friedman: every method needs the same units, got lengths {lengths}")
    from scipy.stats import friedmanchisquare

    res = friedmanchisquare(*[np.asarray(g, dtype=float) for g in groups])
    return float(res.statistic), float(res.pvalue)


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> tuple[list[bool], list[float]]:
    """Holm step-down correction: (reject flags, adjusted p-values), in the input order."""
    if len(pvalues) == 0:
        return [], []
    from statsmodels.stats.multitest import multipletests

    reject, adjusted, _, _ = multipletests(list(pvalues), alpha=alpha, method="holm")
    return [bool(r) for r in reject], [float(p) for p in adjusted]


# --------------------------------------------------------------------------------------------
# Appendix H of MemCo: ranks, Friedman / Iman-Davenport, exact Wilcoxon, Holm


def _complete(table: pd.DataFrame) -> pd.DataFrame:
    """Numeric blocks x methods table restricted to blocks where every method has a value."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError("expected a pandas DataFrame with blocks as rows and methods as columns")
    return table.apply(pd.to_numeric, errors="coerce").dropna(axis=0, how="any")


def block_ranks(table: pd.DataFrame, higher_is_better: bool) -> pd.DataFrame:
    """Rank of each method within each block (row): 1 = best, tied methods share their
    average rank. Blocks with a missing value are dropped."""
    return _complete(table).rank(axis=1, ascending=not higher_is_better, method="average")


def average_ranks(table: pd.DataFrame, higher_is_better: bool) -> pd.Series:
    """Average over blocks of each method's within-block rank (Eq. 33); lower is better."""
    ranks = block_ranks(table, higher_is_better)
    if ranks.empty:
        raise ValueError("average_ranks: no block has a value for every method")
    return ranks.mean(axis=0).rename("avg_rank")


def friedman_iman_davenport(table: pd.DataFrame, higher_is_better: bool) -> dict[str, float]:
    """Friedman test with tie correction and the Iman-Davenport F on blocks x methods.

    ``chi2`` is the tie-corrected statistic chi2_F / C (Eq. 34-35), ``chi2_uncorrected`` the
    plain one, ``C`` = 1 - sum_i sum_g (t^3 - t) / (N (K^3 - K)) over tie groups g of block i,
    ``F_F`` = (N - 1) chi2 / (N (K - 1) - chi2) (Eq. 36) with ``df1`` = K - 1 and ``df2`` =
    (K - 1)(N - 1); ``p`` is the F p-value, ``p_chi2`` the chi2 one. The direction of the
    metric only flips the ranks, so the statistics do not depend on ``higher_is_better``.
    """
    from scipy.stats import chi2 as chi2_dist
    from scipy.stats import f as f_dist

    ranks = block_ranks(table, higher_is_better)
    n, k = ranks.shape
    if k < 3 or n < 2:
        raise ValueError(f"friedman_iman_davenport: needs >= 3 methods and >= 2 complete "
                         f"blocks, got {k} methods and {n} blocks")
    rbar = ranks.mean(axis=0).to_numpy()
    chi2_plain = 12.0 * n / (k * (k + 1)) * (float(np.sum(rbar**2)) - k * (k + 1) ** 2 / 4.0)
    ties = 0.0
    for _, row in ranks.iterrows():
        counts = row.value_counts().to_numpy(dtype=float)
        ties += float(np.sum(counts**3 - counts))
    c = 1.0 - ties / (n * (k**3 - k))
    df1, df2 = k - 1, (k - 1) * (n - 1)
    if c <= 0:  # every block ties every method: nothing to test
        return {"chi2": 0.0, "chi2_uncorrected": chi2_plain, "C": c, "F_F": 0.0,
                "df1": float(df1), "df2": float(df2), "p": 1.0, "p_chi2": 1.0,
                "n_blocks": float(n), "n_methods": float(k)}
    chi2 = chi2_plain / c
    denom = n * (k - 1) - chi2
    f_f = math.inf if denom <= 1e-12 else (n - 1) * chi2 / denom
    p = 0.0 if math.isinf(f_f) else float(f_dist.sf(f_f, df1, df2))
    return {"chi2": float(chi2), "chi2_uncorrected": float(chi2_plain), "C": float(c),
            "F_F": float(f_f), "df1": float(df1), "df2": float(df2), "p": p,
            "p_chi2": float(chi2_dist.sf(chi2, df1)), "n_blocks": float(n),
            "n_methods": float(k)}


def wilcoxon_exact(diffs: Sequence[float]) -> dict[str, float]:
    """Exact two-sided Wilcoxon signed-rank test of paired differences (positive = better).

    Zero differences are dropped; the absolute values of the rest are ranked with average
    ranks for ties. ``T_plus`` / ``T_minus`` are the rank sums of the positive / negative
    differences and ``T`` = min of the two (Eq. 39). ``p`` is the share of all 2^n sign
    assignments of the observed ranks whose min(T+, T-) is <= the observed T: exact under
    the sign-symmetry null, ties included. The 2^n assignments are counted by dynamic
    programming over the (integer) doubled rank sums, so n in the hundreds is cheap.
    ``n`` is the number of nonzero differences.
    """
    from scipy.stats import rankdata

    d = np.asarray([x for x in diffs if x is not None], dtype=float)
    if np.isnan(d).any():
        raise ValueError("wilcoxon_exact: differences contain NaN")
    d = d[d != 0]
    n = int(d.size)
    if n == 0:
        return {"T_plus": 0.0, "T_minus": 0.0, "T": 0.0, "p": 1.0, "n": 0}
    ranks = rankdata(np.abs(d), method="average")
    t_plus, t_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    t = min(t_plus, t_minus)
    doubled = np.rint(2 * ranks).astype(int)  # average ranks are multiples of 1/2
    total = int(doubled.sum())
    counts = np.zeros(total + 1, dtype=object)  # exact big-integer counts of each T+ (x2)
    counts[0] = 1
    for r in doubled:
        shifted = np.zeros_like(counts)
        shifted[r:] = counts[: total + 1 - r]
        counts = counts + shifted
    sums = np.arange(total + 1)
    t2 = int(round(2 * t))
    extreme = np.minimum(sums, total - sums) <= t2
    p = float(sum(counts[extreme]) / 2**n)
    return {"T_plus": t_plus, "T_minus": t_minus, "T": t, "p": min(1.0, p), "n": n}


def rank_biserial(t_plus: float, t_minus: float) -> float:
    """Matched-pairs rank-biserial correlation (T+ - T-) / (T+ + T-) (Eq. 41); NaN when
    every difference is zero."""
    total = t_plus + t_minus
    return (t_plus - t_minus) / total if total > 0 else math.nan


def appendix_h(acc_table: pd.DataFrame, steps_table: pd.DataFrame | None = None,
               control: str = "memco", alpha: float = 0.05) -> dict[str, pd.DataFrame]:
    """MemCo's Appendix H analysis on blocks x methods tables of accuracy (higher is better)
    and steps (lower is better); ``steps_table`` may be None to analyse accuracy alone.

    Returns ``{"ranks", "omnibus", "paired"}``:

    - ``ranks``: per method, ``avg_rank_<metric>`` and (with both metrics) the descriptive
      ``avg_rank_combined`` = mean of the two, sorted best first;
    - ``omnibus``: per metric, :func:`friedman_iman_davenport` (NaN where it cannot run);
    - ``paired``: per baseline x metric, wins / losses / ties of ``control``, the exact
      Wilcoxon ``T_plus``, ``T_minus``, ``T``, ``p``, the Holm-adjusted ``p_holm`` (jointly
      over every row, as in the paper's M = 10 family), ``reject`` at ``alpha`` and ``r_rb``.
      Differences favour ``control`` when positive: acc_control - acc_b, steps_b -
      steps_control (Eq. 37-38).

    Each metric uses the blocks where every method has a value.
    """
    from statsmodels.stats.multitest import multipletests

    tables = {"accuracy": (acc_table, True)}
    if steps_table is not None:
        tables["steps"] = (steps_table, False)
    ranks, omnibus, paired = {}, {}, []
    for metric, (table, higher) in tables.items():
        if control not in table.columns:
            raise ValueError(f"appendix_h: control {control!r} is not a column of the "
                             f"{metric} table (columns: {list(table.columns)})")
        complete = _complete(table)
        ranks[f"avg_rank_{metric}"] = average_ranks(complete, higher)
        try:
            omnibus[metric] = friedman_iman_davenport(complete, higher)
        except ValueError:
            omnibus[metric] = {k: math.nan for k in ("chi2", "chi2_uncorrected", "C", "F_F",
                                                      "df1", "df2", "p", "p_chi2")}
            omnibus[metric].update(n_blocks=float(len(complete)),
                                   n_methods=float(complete.shape[1]))
        for baseline in [c for c in complete.columns if c != control]:
            diff = complete[control] - complete[baseline]
            if not higher:
                diff = -diff
            res = wilcoxon_exact(diff.tolist())
            paired.append({"baseline": baseline, "metric": metric, "n_blocks": len(diff),
                           "wins": int((diff > 0).sum()), "losses": int((diff < 0).sum()),
                           "ties": int((diff == 0).sum()), **res,
                           "r_rb": rank_biserial(res["T_plus"], res["T_minus"])})
    ranks_df = pd.DataFrame(ranks)
    if len(tables) == 2:
        ranks_df["avg_rank_combined"] = ranks_df.mean(axis=1)
    ranks_df = ranks_df.sort_values(list(ranks_df.columns)[-1])
    ranks_df.index.name = "method"
    paired_df = pd.DataFrame(paired)
    if not paired_df.empty:
        reject, adjusted, _, _ = multipletests(paired_df["p"].tolist(), alpha=alpha,
                                               method="holm")
        paired_df["p_holm"] = adjusted
        paired_df["reject"] = reject
    omnibus_df = pd.DataFrame(omnibus).T
    omnibus_df.index.name = "metric"
    return {"ranks": ranks_df, "omnibus": omnibus_df, "paired": paired_df}
