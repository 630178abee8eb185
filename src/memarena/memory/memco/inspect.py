"""Human-readable view of a saved MemCo snapshot (``scripts/inspect_memory.py``).

Shows, per agent, the local graph size and record counts by type, then the promoted global
records with their evidence (n+, n-, n0), promotion score W, rho+ and source agents. The global
memory is rebuilt from the saved local memories with the given promotion settings, exactly as
an evaluation on that snapshot would see it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memarena.core import ConfigError
from memarena.core.memory import SNAPSHOT_FILE


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """The MemCo state saved under a run directory (or its ``memory/`` folder)."""
    path = Path(path)
    for candidate in (path / "memory" / SNAPSHOT_FILE, path / SNAPSHOT_FILE, path):
        if candidate.is_file():
            blob = json.loads(candidate.read_text())
            if blob.get("method") != "memco":
                raise ConfigError(
                    f"memarena: {candidate} is a snapshot of method={blob.get('method')}, not "
                    "memco."
                )
            return blob["state"]
    raise ConfigError(
        f"memarena: no memory snapshot under {path} (expected memory/{SNAPSHOT_FILE}); give a "
        "run directory results/<experiment>/<env>/memco/<backbone>/seed<k>."
    )


def describe(
    state: dict[str, Any],
    *,
    threshold: float = 0.35,
    alpha: float = 0.05,
    rule: str = "wilson",
    top: int = 20,
) -> str:
    """The report text for a saved state."""
    from memarena.memory.memco.method import MemCo

    memory = MemCo(env_name=state.get("env", ""), alpha=alpha, threshold=threshold, promotion=rule)
    memory.load_state_dict(state)
    summary = memory.summary()
    lines = [f"MemCo snapshot (env {state.get('env') or '?'})", "", "Local memories:"]
    for agent, info in summary["agents"].items():
        graph = info["graph"]
        counts = ", ".join(f"{k} {v}" for k, v in info["records"].items()) or "none"
        lines.append(
            f"  {agent}: graph {graph['nodes']} nodes / {graph['edges']} edges from "
            f"{graph['episodes']} episodes; records: {counts}"
        )
    glob = summary["global"]
    diag = ", ".join(f"{k} {v}" for k, v in glob["diagnostics"].items())
    lines += [
        "",
        f"Global memory: {glob['records']} records promoted ({rule}, alpha={alpha}, "
        f"lambda={threshold}); rebuild: {diag}",
    ]
    ranked = sorted(memory.global_memory, key=lambda r: (-r.score, r.key))
    for r in ranked[:top]:
        lines.append(
            f"  W={r.score:.4f} rho+={r.rho:.2f} n+={r.n_pos} n-={r.n_neg} n0={r.n_stall} "
            f"[{r.type}] from {', '.join(r.sources)}: {r.text or ' -> '.join(r.actions)}"
        )
    if len(ranked) > top:
        lines.append(f"  ... {len(ranked) - top} more (--top)")
    return "\n".join(lines)
