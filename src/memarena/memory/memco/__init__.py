"""MemCo: local graph memory per agent, Wilson-promoted global memory shared across agents, and
query-guided composition at every step (memco.txt, Sections 3.3-3.5, Appendix B).

  records.py        record types, evidence ledger, episode reduction
  induction.py      transitions from trajectories, record induction with deterministic evidence
  graph.py          episodic graphs and LocalMerge
  roles.py          role-level abstraction per benchmark (keyed by env name)
  abstraction.py    Abstract(p) and the exact global key
  checks.py         structural and low-information checks before promotion
  wilson.py         the one-sided Wilson lower bound
  global_memory.py  global snapshot rebuild (aggregation, checks, promotion, GlobalMerge)
  query.py          the per-step decision query
  retrieval.py      facets r_x, r_p, r_g, filters, full rank, bounded selection
  compose.py        role binding, ground / workflow / reflection, the Decision Summary;
                    the fixed L5+G5 concatenation ablation
  method.py         MemCo(MemoryMethod): wires the parts above
"""

from memarena.memory.memco.method import MemCo

__all__ = ["MemCo"]
