"""The inventory of the papers' tables and figures (``notebooks/README.md``) as rows.

Each row of the README's inventory table is one table or figure of a paper: its paper, item
(``Table 3``, ``Figure 5(b)``, ``Figure A.2``), what it shows, the notebook sections that write
it (``memco.ipynb § Table 1``, several joined by ``;``), the output files, the experiment
configs (``conf/experiment/<name>.yaml``, in backticks) and its status (``regenerated`` or
``illustration only: <why>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "notebooks" / "README.md"
PAPERS = {"MemCo": "memco", "ReMe": "reme", "EvoGraph-Mem": "evograph_mem"}
REGENERATED = "regenerated"
ILLUSTRATION = "illustration only"


@dataclass(frozen=True)
class Item:
    paper: str  # MemCo, ReMe, EvoGraph-Mem
    item: str  # Table 3, Figure 5(b), Figure A.2
    shows: str
    sections: tuple[tuple[str, str], ...]  # (notebook file, section heading)
    outputs: tuple[str, ...]  # file names under the notebook's OUT_DIR
    experiments: tuple[str, ...]  # conf/experiment/<name>.yaml
    status: str

    @property
    def regenerated(self) -> bool:
        return self.status == REGENERATED

    @property
    def notebooks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(nb for nb, _ in self.sections))


def items(path: str | Path = README) -> list[Item]:
    """The rows of the inventory table of ``path`` (default ``notebooks/README.md``)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or cells[0] not in PAPERS:
            continue
        paper, item, shows, sections, outputs, experiments, status = cells
        parsed = []
        for part in sections.split(";"):
            if "§" in part:
                notebook, heading = part.split("§", 1)
                parsed.append((notebook.strip(), heading.strip()))
        out.append(
            Item(
                paper=paper,
                item=item,
                shows=shows,
                sections=tuple(parsed),
                outputs=tuple(o.strip() for o in outputs.split(",") if o.strip() not in ("", "—")),
                experiments=tuple(re.findall(r"`([^`]+)`", experiments)),
                status=status,
            )
        )
    return out


def figures(path: str | Path = README) -> dict[str, list[str]]:
    """Notebook stem -> the PNG files the inventory marks regenerated, in inventory order."""
    out: dict[str, list[str]] = {}
    for row in items(path):
        if not row.regenerated:
            continue
        for notebook in row.notebooks:
            for name in row.outputs:
                mine = out.setdefault(Path(notebook).stem, [])
                if name.endswith(".png") and name not in mine:
                    mine.append(name)
    return out
