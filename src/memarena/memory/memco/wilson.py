"""The one-sided Wilson lower confidence bound used for global promotion (MemCo Eq. 4).

``W = (s*rho + z^2/2 - z*sqrt(s*rho*(1-rho) + z^2/4)) / (s + z^2)`` with ``s = n+ + n-``,
``rho = n+ / max(s, 1)`` and ``z = Phi^-1(1 - alpha)``; ``W = 0`` when ``s = 0``.
At alpha = 0.05: LB(2,0) = 0.4250, LB(3,0) = 0.5258, LB(3,1) = 0.3562.
"""

from __future__ import annotations

import math
from functools import lru_cache

from scipy.stats import norm


@lru_cache(maxsize=64)
def z_value(alpha: float) -> float:
    """``Phi^-1(1 - alpha)``, the one-sided normal quantile."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha={alpha} must lie in (0, 1/2)")
    return float(norm.ppf(1.0 - alpha))


def wilson_lower_bound(n_pos: int, n_neg: int, alpha: float = 0.05) -> float:
    """One-sided Wilson lower bound of the supporting rate ``n_pos / (n_pos + n_neg)``."""
    s = n_pos + n_neg
    if s <= 0:
        return 0.0
    z = z_value(alpha)
    rho = n_pos / s
    centre = s * rho + z * z / 2.0
    spread = z * math.sqrt(s * rho * (1.0 - rho) + z * z / 4.0)
    return max(0.0, (centre - spread) / (s + z * z))


def empirical_rate(n_pos: int, n_neg: int) -> float:
    """``rho+ = n+ / max(s, 1)``: the empirical-promotion ablation's score."""
    return n_pos / max(n_pos + n_neg, 1)


def promotion_score(n_pos: int, n_neg: int, rule: str = "wilson", alpha: float = 0.05) -> float:
    """The admission score of a record: ``wilson`` (W) or ``empirical`` (rho+)."""
    if rule == "wilson":
        return wilson_lower_bound(n_pos, n_neg, alpha)
    if rule == "empirical":
        return empirical_rate(n_pos, n_neg)
    raise ValueError(f"promotion rule {rule!r}; valid: wilson, empirical")
