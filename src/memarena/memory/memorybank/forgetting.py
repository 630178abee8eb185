"""MemoryBank's forgetting curve (Zhong et al., 2023, Section 2.3).

Each memory has a strength S and the time t elapsed since it was learnt or last recalled; its
retention is ``R = exp(-t / S)`` (the Ebbinghaus curve as the paper writes it). S starts at
``initial_strength`` (1: "first mention"); a recall sets ``S <- S + 1`` and resets t to 0. A
memory whose retention falls below the threshold is forgotten.

The released MemoryBank code computes ``exp(-t / 5 * S)``, which Python reads as
``exp(-(t / 5) * S)``: a stronger memory would fade *faster*. That is an operator-precedence
slip against the paper's formula; memarena implements the paper's ``exp(-t / S)``.

memarena's clock is the task index: t counts tasks observed since the last recall.
"""

from __future__ import annotations

import math


def retention(elapsed: float, strength: float) -> float:
    """``R = exp(-t / S)`` for ``t = elapsed`` >= 0 and ``S = strength`` > 0."""
    if strength <= 0:
        raise ValueError(f"memory strength must be > 0, got {strength}")
    return math.exp(-max(0.0, float(elapsed)) / float(strength))
