"""A saved EvoGraph-Mem snapshot as text: the active insights with their version chains
(``v3 ins-5 <- v2 ins-2 <- v1 ins-1``: each revision archives its parent), evidence counts
(|Omega+|, |Omega-|) and last operation, then the archived ones and the controller's
decisions."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def chain(node: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> str:
    """``v<k> <id>`` of the node and each of its ancestors, newest first."""
    links = []
    while node is not None:
        links.append(f"v{node.get('version', 1)} {node['id']}")
        node = nodes.get(node.get("parent"))
    return " <- ".join(links)


def _row(node: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> str:
    last = node["trace"][-1]["op"] if node.get("trace") else "-"
    return (
        f"{chain(node, nodes)} +{len(node.get('pos', []))}/-{len(node.get('neg', []))} "
        f"last {last}: {clip(node['content'])}"
    )


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    nodes = {n["id"]: n for n in state["insights"]}
    active = [n for n in nodes.values() if n.get("active", True)]
    archived = [n for n in nodes.values() if not n.get("active", True)]
    revised = sum(1 for n in nodes.values() if n.get("parent"))
    lines = [
        f"EvoGraph-Mem snapshot: {len(active)} active insights, {len(archived)} archived, "
        f"{revised} revisions, {len(state.get('edges', []))} co-occurrence edges",
        "",
        "Active insights (version chain, +positive/-negative evidence):",
        *listing([_row(n, nodes) for n in active], top),
        "",
        "Archived:",
        *listing([_row(n, nodes) for n in archived], top),
    ]
    if state.get("decisions"):
        lines += ["", "decisions: " + ", ".join(f"{k} {v}" for k, v in state["decisions"].items())]
    return "\n".join(lines + footer(state))
