"""Generative Agents' memory (Park et al., 2023) as ``method=generative_agents``: see
:mod:`.method`."""

from memarena.memory.generative_agents.method import GenerativeAgents
from memarena.memory.generative_agents.stream import MemoryObject, MemoryStream, min_max

__all__ = ["GenerativeAgents", "MemoryObject", "MemoryStream", "min_max"]
