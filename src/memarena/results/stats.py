"""Small statistics helpers for comparing methods across seeds and tasks.

- :func:`mean_std`: mean ± sample standard deviation over seeds (std is NaN for one seed);
- :func:`wilson_ci`: Wilson score interval of a success rate;
- :func:`wilcoxon_paired`: paired Wilcoxon signed-rank test (two methods on the same units);
- :func:`friedman`: Friedman test (three or more methods on the same units);
- :func:`holm`: Holm correction of a family of p-values.

"Units" are whatever the comparison pairs: seeds, tasks, or (env, seed) cells. Each helper
returns plain floats/lists so a notebook can put them straight into a DataFrame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, sample std with ddof=1, n) of the non-NaN values; std is NaN when n < 2."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        return math.nan, math.nan, 0
    std = float(arr.std(ddof=1)) if n > 1 else math.nan
    return float(arr.mean()), std, n


def wilson_ci(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` at level ``1 - alpha``."""
    if n <= 0:
        raise ValueError(f"wilson_ci: n must be positive, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"wilson_ci: successes must lie in [0, n], got {successes} of {n}")
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(low), float(high)


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
