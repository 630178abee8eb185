"""MemRL's value-aware selection and Q update (the rules, as plain functions).

- :func:`zscores`: ``(x - mean) / std`` over the candidates (population std), clipped to
  ``+-clip``; all zeros when the candidates do not vary.
- :func:`value_scores`: ``score = w_sim * z(sim) + (1 - w_sim) * z(Q)`` per candidate (MemRL:
  0.5 / 0.5). MemRL's code normalises similarity with fixed corpus statistics when they are
  given (``sim_stats``; ALFWorld: mean 0.5187, std 0.1203, unclipped) and Q over the
  candidates, clipped to +-3.
- :func:`q_update`: the Monte-Carlo value update ``Q <- (1 - alpha) Q + alpha r``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def zscores(values: Sequence[float], clip: float | None = 3.0) -> list[float]:
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return []
    std = float(x.std())
    if std <= 1e-12:
        return [0.0] * int(x.size)
    z = (x - x.mean()) / std
    if clip is not None:
        z = np.clip(z, -clip, clip)
    return z.tolist()


def value_scores(
    sims: Sequence[float],
    qs: Sequence[float],
    sim_weight: float = 0.5,
    clip: float = 3.0,
    sim_stats: tuple[float, float] | None = None,
) -> list[float]:
    if sim_stats is None:
        z_sim = zscores(sims, clip)
    else:
        mean, std = sim_stats
        z_sim = [(s - mean) / std for s in sims]
    z_q = zscores(qs, clip)
    return [sim_weight * a + (1.0 - sim_weight) * b for a, b in zip(z_sim, z_q, strict=True)]


def q_update(q: float, reward: float, alpha: float) -> float:
    return (1.0 - alpha) * q + alpha * reward
