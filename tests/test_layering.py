"""Two layering rules of the design (docs: DESIGN.md section 1), read from the import statements
of every module (nested imports included): ``results`` reads files and knows no method, and a
memory method gets its LLM and embedder through ``MemoryServices``, never by importing an
engine, an agent, a pipeline or a benchmark."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

SRC = ROOT / "src" / "memarena"
RULES = {
    "results": ("memarena.memory", "memarena.agent", "memarena.pipeline", "memarena.llm",
                "memarena.envs", "memarena.embed"),
    "memory": ("memarena.llm", "memarena.agent", "memarena.pipeline", "memarena.envs",
               "memarena.embed", "memarena.results", "memarena.reports"),
}  # fmt: skip


def imports(path: Path) -> list[str]:
    """Every module a file imports (absolute names; relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            out += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return out


@pytest.mark.parametrize("layer", sorted(RULES))
def test_a_layer_imports_nothing_above_it(layer):
    broken = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (SRC / layer).rglob("*.py")
        for name in imports(path)
        if any(name == bad or name.startswith(bad + ".") for bad in RULES[layer])
    )
    assert not broken, "\n".join(broken)
