"""MemRL (Zhang et al., 2026) as ``method=memrl``: see :mod:`.method`."""

from memarena.memory.memrl.method import MemRL
from memarena.memory.memrl.values import q_update, value_scores, zscores

__all__ = ["MemRL", "q_update", "value_scores", "zscores"]
