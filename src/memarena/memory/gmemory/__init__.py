"""G-Memory (Zhang et al. 2025): hierarchical memory of interaction graphs, a query graph and
scored insights (evograph_mem.txt Section 3.1), at parity with the reference code
(bingreeky/GMemory).

  interaction.py  interaction graphs per task, LLM key steps and causes of failure (batched, JSON)
  query_graph.py  query nodes, similarity links, top-k + hop-expansion retrieval (Eq. 1-4)
  retrieval.py    solved candidates, LLM relevance re-ranking, the insight neighbourhood
  insights.py     insights, their scores and the reference's operation rules (Eq. 5)
  maintenance.py  fine-tuning on sampled tasks and the per-cluster merge
  cluster.py      FINCH clustering of the stored tasks (for the merge)
  render.py       how stored tasks and rules are written into prompts
  episodes.py     the episodes a memory stored, kept to be observed again (global memory)
  prompts.py      prompt strings and JSON schemas
  method.py       GMemory(MemoryMethod): wires the parts; hooks for EvoGraph-Mem
"""

from memarena.memory.gmemory.method import GMemory

__all__ = ["GMemory"]
