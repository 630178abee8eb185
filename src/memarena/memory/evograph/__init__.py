"""EvoGraph-Mem: G-Memory's hierarchical memory with a failure-aware, editable insight graph
maintained by an LLM graph controller (evograph_mem.txt).

  insight_graph.py  insight nodes (content, Omega+, Omega-, active), Eq. 7-10 retrieval,
                    Eq. 13-18 operations, version history
  controller.py     the JSON-constrained graph controller and its counted fallback
  method.py         EvoGraphMem(GMemory): wires both into G-Memory's query graph
"""

from memarena.memory.evograph.method import EvoGraphMem

__all__ = ["EvoGraphMem"]
