"""No import circles between memarena's modules, including the ones a function-local import
hides (``pipeline/__init__.py`` <-> ``config_check.py`` and ``envs/scienceworld/tasks.py`` <->
``agentboard.py`` were two, issue 38). Reads the sources only (fast): every ``import`` anywhere
in a module, function bodies included, is an edge; importing a module also runs its parent
packages' ``__init__``, so an edge to ``a.b.c`` is an edge to ``a.b`` too. A package importing
its own submodules (and a submodule its own package) is the ordinary layout, not a circle."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def module_files() -> dict[str, Path]:
    found = {}
    for path in (SRC / "memarena").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The memarena modules and packages that importing ``module`` may run."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            names += [f"{base}.{alias.name}" for alias in node.names]
    edges = set()
    for name in names:
        while name and name not in known:  # ``from pkg import attr``: the package
            name = name.rpartition(".")[0]
        while name.startswith("memarena."):  # the module, then every parent package it runs
            if name != module and not module.startswith(name + "."):
                edges.add(name)
            name = name.rpartition(".")[0]
    return edges


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_between_memarena_modules():
    known = module_files()
    graph = {m: imports_of(m, p, known) & set(known) for m, p in known.items()}
    assert not circles(graph), (
        "import circles (break them: move the shared piece into a module both can import at "
        f"the top): {circles(graph)}"
    )


def test_a_circle_hidden_in_a_function_is_found(tmp_path):
    known = {"memarena.a": tmp_path / "a.py", "memarena.b": tmp_path / "b.py"}
    known["memarena.a"].write_text("def f():\n    from memarena.b import g\n")
    known["memarena.b"].write_text("from memarena import a\n")
    graph = {m: imports_of(m, p, known) for m, p in known.items()}
    assert graph == {"memarena.a": {"memarena.b"}, "memarena.b": {"memarena.a"}}
    assert circles(graph) == [["memarena.a", "memarena.b"]]
