"""Write ReMe's BFCL-V3 train / validation task ids into memarena's package, so ``env.split=reme``
runs the 50 / 150 multi_turn_base tasks ReMe's released code runs, without ReMe's code.

ReMe (agentscope-ai/ReMe, commit 26cb5ca6) fixes its split in ``benchmark/bfcl/default_ids.py``:
two sets of entry ids, ``DEFAULT_TRAIN_IDS`` (50) and ``DEFAULT_VAL_IDS`` (150), which its
``split_into_trainval.py`` uses to cut ``multiturn_data_base.jsonl`` into the train file (memory
acquisition) and the val file its ``run_bfcl.py`` evaluates. The file is read as text (its two
set literals, with :mod:`ast`), never imported, and written to
``src/memarena/envs/bfcl/reme_ids.json``: ``source`` (repository, commit, path), ``train``
and ``test`` (= ReMe's val), each sorted by entry index.

    git -C <ReMe clone> show 26cb5ca6:benchmark/bfcl/default_ids.py > /tmp/default_ids.py
    python scripts/reme_bfcl_ids.py /tmp/default_ids.py
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/memarena/envs/bfcl/reme_ids.json"
SOURCE = {
    "repository": "https://github.com/agentscope-ai/ReMe",
    "commit": "26cb5ca6",
    "path": "benchmark/bfcl/default_ids.py",
    "note": "written by scripts/reme_bfcl_ids.py; train = DEFAULT_TRAIN_IDS, "
    "test = DEFAULT_VAL_IDS (the set run_bfcl.py evaluates)",
}
NAMES = {"train": "DEFAULT_TRAIN_IDS", "test": "DEFAULT_VAL_IDS"}


def read_id_sets(path: Path) -> dict[str, list[str]]:
    """``{"train": [...], "test": [...]}`` from a ``default_ids.py``, sorted by entry index."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and node.value is not None:
            found[target.id] = set(ast.literal_eval(node.value))
    missing = [name for name in NAMES.values() if name not in found]
    if missing:
        raise SystemExit(f"{path} defines no {', '.join(missing)}")
    out = {split: sorted(found[name], key=_index) for split, name in NAMES.items()}
    shared = set(out["train"]) & set(out["test"])
    if shared:
        raise SystemExit(f"{path}: ids in both sets: {sorted(shared, key=_index)}")
    return out


def _index(entry_id: str) -> int:
    return int(entry_id.rsplit("_", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("default_ids", type=Path, help="ReMe's benchmark/bfcl/default_ids.py")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    ids = read_id_sets(args.default_ids)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = {"source": SOURCE, **ids}
    args.out.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(ids['train'])} train, {len(ids['test'])} test ids")


if __name__ == "__main__":
    main()
