"""Reading saved memory snapshots for people (``scripts/inspect_memory.py``).

Each method package that stores something has an ``inspect`` module with
``describe(state, *, top=20) -> str``: the saved ``state`` (what its ``state_dict`` wrote) as
readable text. This module finds a run's snapshots, dispatches on the package the snapshot
records (``memory.json`` ``package``; older snapshots: the method name), and holds the few
helpers those modules share.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import memarena.memory as memory_package
from memarena.core import ConfigError
from memarena.core.memory import SNAPSHOT_FILE


def known_methods() -> list[str]:
    """The methods whose package has an ``inspect`` module (``none`` and ``icl`` store
    nothing)."""
    root = Path(memory_package.__path__[0])
    return sorted(
        info.name
        for info in pkgutil.iter_modules([str(root)])
        if info.ispkg and (root / info.name / "inspect.py").is_file()
    )


def find_snapshots(path: str | Path) -> list[Path]:
    """The snapshot files of a run directory: ``memory/`` first, then those under
    ``memory_final/`` (a learning run's ends). ``path`` may also be a memory folder or a
    ``memory.json`` itself."""
    path = Path(path)
    if path.is_file():
        return [path]
    if (path / SNAPSHOT_FILE).is_file():
        return [path / SNAPSHOT_FILE]
    found = [path / "memory" / SNAPSHOT_FILE] if (path / "memory" / SNAPSHOT_FILE).is_file() else []
    found += sorted((path / "memory_final").rglob(SNAPSHOT_FILE))
    if not found:
        raise ConfigError(
            f"memarena: no memory folder under {path} (expected memory/{SNAPSHOT_FILE} or "
            f"memory_final/run<k>/{SNAPSHOT_FILE}). Give a run directory "
            "results/<experiment>/<env>/<method>/<backbone>/seed<k> of a method that stores "
            "memory (none and icl store nothing), after its acquisition ran."
        )
    return found


def load_snapshot(path: Path) -> dict[str, Any]:
    """The saved blob ``{"method", "schema_version", "state"}``."""
    try:
        blob = json.loads(path.read_text())
        blob["state"]
    except (ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"memarena: {path} is not a memory snapshot ({err!r}).") from None
    return blob


def package_of(method: str) -> str:
    """The method package of a snapshot that does not record its ``package`` (written before
    snapshots did): the name itself, or its longest ``_``-separated prefix that is a package
    (``amem_lite`` is A-Mem's)."""
    known, parts = known_methods(), method.split("_")
    for n in range(len(parts), 0, -1):
        if "_".join(parts[:n]) in known:
            return "_".join(parts[:n])
    return method


def inspector_of(blob: dict[str, Any]) -> Callable[..., str]:
    """The ``describe`` of the package that wrote ``blob``: its recorded ``package``
    (``memarena.memory.amem``), else the package its method name belongs to
    (:func:`package_of`)."""
    method = str(blob.get("method"))
    package = blob.get("package") or f"{memory_package.__name__}.{package_of(method)}"
    module = f"{package}.inspect"
    try:
        return importlib.import_module(module).describe
    except ModuleNotFoundError as err:
        if not err.name or not module.startswith(err.name):  # a broken inspector: its own error
            raise
        raise ConfigError(
            f"memarena: no inspector for a snapshot of method={method} (package {package}); "
            f"known methods: {', '.join(known_methods())}. Add {package.replace('.', '/')}"
            "/inspect.py with describe(state, *, top) -> str."
        ) from None


def describe_snapshot(blob: dict[str, Any], **options: Any) -> str:
    """The text of a snapshot, by its method's ``inspect.describe``. ``options`` it does not
    take are left out (``threshold``, ``alpha`` and ``rule`` are MemCo's)."""
    describe = inspector_of(blob)
    taken = inspect.signature(describe).parameters
    kept = {k: v for k, v in options.items() if k in taken}
    state = blob["state"]
    if "domain_memories" in state:  # per-domain memories (memory/team.py): each, then the global
        parts = [
            f"== domain {d} ==\n{describe(s, **kept)}" for d, s in state["domain_memories"].items()
        ]
        if state.get("global") is not None:
            parts.append(f"== global ==\n{describe(state['global'], **kept)}")
        return "\n\n".join(parts)
    return describe(state, **kept)


# -- helpers for the per-method modules -----------------------------------------------------------
def clip(text: Any, limit: int = 160) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def listing(rows: list[str], top: int, indent: str = "  ") -> list[str]:
    """The first ``top`` rows, indented, and a line counting the rest (``none`` for no rows)."""
    lines = [indent + row for row in rows[:top]] or [indent + "none"]
    if len(rows) > top:
        lines.append(f"{indent}... {len(rows) - top} more (--top)")
    return lines


def footer(state: dict[str, Any]) -> list[str]:
    """The counters every method keeps: counts, the memory LLM's calls, fallbacks."""
    lines = []
    if state.get("counts"):
        lines.append("counts: " + ", ".join(f"{k} {v}" for k, v in state["counts"].items()))
    calls = {p: u.get("calls", 0) for p, u in state.get("token_usage", {}).items()}
    if any(calls.values()):
        lines.append("LLM calls: " + ", ".join(f"{p} {n}" for p, n in calls.items() if n))
    if state.get("fallbacks"):
        lines.append("fallbacks: " + ", ".join(f"{k} {v}" for k, v in state["fallbacks"].items()))
    return ["", *lines] if lines else []


def stored_task(task: dict[str, Any]) -> str:
    """A stored episode (``episodic.StoredTask``) as one line."""
    status = "solved" if task.get("success") else f"failed (progress {task.get('progress', 0)})"
    return (
        f"{task['id']} t={task.get('time', 0)} {status}, {len(task.get('steps', []))} steps: "
        + clip(task.get("goal", ""), 100)
    )
