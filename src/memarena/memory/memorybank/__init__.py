"""MemoryBank (Zhong et al., 2023) as ``method=memorybank``: see :mod:`.method`."""

from memarena.memory.memorybank.forgetting import retention
from memarena.memory.memorybank.method import MemoryBank

__all__ = ["MemoryBank", "retention"]
