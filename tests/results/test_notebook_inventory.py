"""notebooks/README.md's inventory against the paper texts and the code (fast: no runs).

Every table and figure caption of the three papers (``Table N:``, ``Figure N:``, ``Figure A.N:``
in ../shared/papers/*.txt) has a row; every row marked regenerated names notebook sections that
exist, experiment configs that exist and output files that the notebook or its report code
writes; every figure file the report code draws is in the inventory."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT
from memarena.reports import inventory as inv

PAPERS_DIR = ROOT.parent / "shared" / "papers"
CAPTION = re.compile(r"(Table|Figure) ((?:A\\?\.)?[0-9]+)\\?:")
# captions counted by hand in the texts (MemCo: Tables 1-18, Figures 1-6, A.1-A.6; ReMe:
# Tables 1-9, Figures 1-9; EvoGraph-Mem: Tables 1-2, Figures 1-3)
COUNTS = {"MemCo": (18, 12), "ReMe": (9, 9), "EvoGraph-Mem": (2, 3)}
REPORT_CODE = sorted((ROOT / "src" / "memarena" / "reports").rglob("*.py"))


def paper_labels(paper: str) -> list[str]:
    path = PAPERS_DIR / f"{inv.PAPERS[paper]}.txt"
    if not path.exists():
        pytest.fail(f"paper text not found at {path} (../shared/papers beside the checkout)")
    text = path.read_text(encoding="utf-8")
    labels = [f"{kind} {num.replace(chr(92), '')}" for kind, num in CAPTION.findall(text)]
    return list(dict.fromkeys(labels))


def covers(item: str, label: str) -> bool:
    """``Figure 1(b,c)`` covers ``Figure 1``; ``Figure 10`` does not."""
    return item == label or (item.startswith(label) and not item[len(label)].isalnum()
                             and item[len(label)] != ".")  # fmt: skip


@pytest.fixture(scope="module")
def rows() -> list[inv.Item]:
    return inv.items()


@pytest.mark.parametrize("paper", list(inv.PAPERS))
def test_every_table_and_figure_of_the_paper_has_a_row(rows, paper):
    labels = paper_labels(paper)
    tables = [x for x in labels if x.startswith("Table")]
    assert (len(tables), len(labels) - len(tables)) == COUNTS[paper], labels
    mine = [r.item for r in rows if r.paper == paper]
    missing = [label for label in labels if not any(covers(item, label) for item in mine)]
    assert not missing, f"{paper}: no inventory row for {missing}"
    unknown = [item for item in mine if not any(covers(item, label) for label in labels)]
    assert not unknown, f"{paper}: rows for items the paper does not have: {unknown}"
    assert len(set(mine)) == len(mine), "an item listed twice"


def notebook_parts(name: str) -> tuple[list[str], str]:
    """(first lines of the markdown cells, all code) of notebooks/<name>."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    headings = [
        c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown" and c.source
    ]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return headings, code


def test_every_regenerated_row_names_real_sections_experiments_and_outputs(rows):
    report_code = "\n".join(p.read_text(encoding="utf-8") for p in REPORT_CODE)
    regenerated = [r for r in rows if r.regenerated]
    assert len(regenerated) >= 35
    for row in regenerated:
        where = f"{row.paper} {row.item}"
        assert row.sections and row.outputs and row.experiments, where
        code = ""
        for notebook, heading in row.sections:
            assert (ROOT / "notebooks" / notebook).exists(), f"{where}: no notebooks/{notebook}"
            headings, nb_code = notebook_parts(notebook)
            assert any(h.startswith(f"## {heading}") for h in headings), (
                f"{where}: {notebook} has no section '## {heading}'"
            )
            code += nb_code
        for name in row.outputs:
            stem, suffix = Path(name).stem, Path(name).suffix
            assert suffix in (".png", ".csv"), f"{where}: {name}"
            # a CSV is written by show(df, "<stem>") / write_table(df, dir, "<stem>"), a PNG by a
            # report function whose default name is "<name>"
            quoted = f'"{name}"' if suffix == ".png" else f'"{stem}"'
            assert quoted in code or quoted in report_code, f"{where}: nothing writes {name}"
        for experiment in row.experiments:
            assert (ROOT / "conf" / "experiment" / f"{experiment}.yaml").exists(), (
                f"{where}: no conf/experiment/{experiment}.yaml"
            )


def test_illustration_rows_say_why(rows):
    for row in rows:
        assert row.regenerated or row.status.startswith(f"{inv.ILLUSTRATION}: "), row
        if not row.regenerated:
            assert len(row.status) > len(inv.ILLUSTRATION) + 5 and not row.outputs, row


def test_every_paper_figure_the_report_code_draws_is_in_the_inventory(rows):
    listed = {name for r in rows for name in r.outputs}
    drawn = set()
    for path in REPORT_CODE:
        if path.parent.name in ("memco", "reme", "evograph"):
            drawn |= set(re.findall(r'"([A-Za-z0-9_]+\.png)"', path.read_text(encoding="utf-8")))
    assert drawn and not drawn - listed, (
        f"figures missing from notebooks/README.md: {drawn - listed}"
    )
    assert inv.figures()["reme"][-1] == "fig5b_failure_categories.png"
