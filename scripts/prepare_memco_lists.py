"""Write MemCo's own task lists into memarena's package, compactly, so paper experiments pin them
(``env.task_list=memco``, ``env.partition=memco``) without the user's copy of MemCo's code.

MemCo's code (SYannL/nvdamas, folder ``data/``) ships the source-domain lists its paper runs
used. This keeps only what identifies each task, in list order:

- ALFWorld (``alfworld/collab_subsets/v3_s/<domain>__<split>.json``): the game path in the
  official layout and the scene domain -> ``envs/alfworld/data/memco_task_lists.json``;
- ScienceWorld (``ScienceWorld/collab_subsets/v4_id_grouped/<group>__{train,test}.json``):
  task name, variation, description and MemCo's task-family group ->
  ``envs/scienceworld/data/memco_{train,test}.json``;
- FEVER (``fever/fever_ab_{train_A,train_B,test}_v3.jsonl``): claim id, split, domain and
  label (the claims themselves come from the user's FEVER dev file) ->
  ``envs/fever/data/memco_official_partition.jsonl``.

PDDL needs no list: MemCo's ``pddl_domain_*.jsonl`` are AgentBoard's 60 test problems by index
(``env.train_source=problems`` with ``env.problem_order=lexicographic``).

    python scripts/prepare_memco_lists.py --memco-data <nvdamas>/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memarena.core.jsonl import read_jsonl

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memarena" / "envs"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "memco_partitions"
ALFWORLD_SPLITS = ("train", "valid_seen", "valid_unseen")


def alfworld_lists(root: Path) -> list[dict]:
    folder = root / "alfworld" / "collab_subsets" / "v3_s"
    rows = []
    for path in sorted(folder.glob("*__*.json")):
        domain, split = path.stem.split("__", 1)
        if domain == "merged" or split not in ALFWORLD_SPLITS:
            continue
        for entry in json.loads(path.read_text()):
            game = entry["env_kwargs"]["gamefile"]
            rows.append({"gamefile": game[game.index("json_2.1.1/") :], "scene_domain": domain})
    return rows


def scienceworld_lists(root: Path) -> dict[str, list[dict]]:
    folder = root / "ScienceWorld" / "collab_subsets" / "v4_id_grouped"
    out: dict[str, list[dict]] = {"train": [], "test": []}
    for split in out:
        files = sorted(
            (p for p in folder.glob(f"*__{split}.json") if p.stem.split("__")[0].isdigit()),
            key=lambda p: int(p.stem.split("__")[0]),
        )
        for path in files:
            for e in json.loads(path.read_text()):
                out[split].append(
                    {
                        "sw_task_name": e["sw_task_name"],
                        "variation_idx": int(e["variation_idx"]),
                        "sw_task_desc": e.get("sw_task_desc", ""),
                        "group": str(e.get("scienceworld_task_group") or path.stem.split("__")[0]),
                    }
                )
    return out


def fever_partition(root: Path) -> list[dict]:
    files = {
        "fever_ab_train_A_v3.jsonl": "train",
        "fever_ab_train_B_v3.jsonl": "train",
        "fever_ab_test_v3.jsonl": "test",
    }
    rows = []
    for name, split in files.items():
        for r in read_jsonl(root / "fever" / name):
            rows.append(
                {
                    "id": r["id"],
                    "split": split,
                    "ab_domain": r["ab_domain"],
                    "label": r["label"],
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memco-data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    root = args.memco_data
    alf = PACKAGE / "alfworld" / "data" / "memco_task_lists.json"
    alf.parent.mkdir(parents=True, exist_ok=True)
    alf.write_text(json.dumps(alfworld_lists(root), indent=0) + "\n")
    sw = scienceworld_lists(root)
    for split, rows in sw.items():
        path = PACKAGE / "scienceworld" / "data" / f"memco_{split}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=0) + "\n")
    fever = PACKAGE / "fever" / "data" / "memco_official_partition.jsonl"
    fever.write_text("".join(json.dumps(r) + "\n" for r in fever_partition(root)))
    print(f"wrote {alf}, scienceworld memco_train/test.json, {fever}")


if __name__ == "__main__":
    main()
