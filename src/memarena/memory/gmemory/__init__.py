"""G-Memory (Zhang et al. 2025): hierarchical memory of interaction graphs, a query graph and an
insight graph (evograph_mem.txt Section 3.1; DESIGN.md section 6).

  interaction.py  interaction graphs per task, LLM key-step extraction (batched, JSON)
  query_graph.py  query nodes, similarity links, top-k + hop-expansion retrieval (Eq. 1-4)
  insights.py     insight graph, hyper-edges, ranking, LLM maintenance and merge (Eq. 5)
  prompts.py      prompt strings and JSON schemas
  method.py       GMemory(MemoryMethod): wires the parts; hooks for EvoGraph-Mem
"""

from memarena.memory.gmemory.method import GMemory

__all__ = ["GMemory"]
