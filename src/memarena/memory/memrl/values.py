"""MemRL's value-aware selection and Q update (the rules, as plain functions).

- :func:`zscores`: ``(x - mean) / std`` over the candidates (population std), clipped to
  ``+-clip``; all zeros when the candidates do not vary (the reference divides by 1 then, and
  a lone candidate has std 1: both give 0).
- :func:`value_scores`: ``score = w_sim * z(sim) + (1 - w_sim) * z(Q)`` per candidate (MemRL:
  0.5 / 0.5). z(Q) is over the candidates, clipped to +-3 (MemTensor/MemRL
  ``memory_service.py:1246-1252``). z(sim) uses fixed statistics when ``sim_stats`` is given,
  unclipped (``memory_service.py:1239-1244``): the service's own defaults 0.18568 / 0.09408
  (``:311-312``, what MemCo's ``memrl_mas.py`` runs) or a config's (MemRL's ALFWorld: 0.5187 /
  0.1203); ``sim_stats=None`` z-scores the similarities over the candidates like Q.
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
