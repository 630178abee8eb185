"""Game folders in the official ALFWorld layout, and MemCo's task lists.

Official data: ``<data_path>/json_2.1.1/{train,valid_seen,valid_unseen}/<task>-<scene>/<trial>/``
with ``game.tw-pddl`` and ``traj_data.json`` (``data_path`` may also point at ``json_2.1.1``
itself). The generated household suite uses the same layout. Scene domains come from the scene
number at the end of the task folder name (MemCo: kitchen 1-30, living room 201-230, bedroom
301-330, bathroom 401-430).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memarena.envs.alfworld.scenes import SHORT_TASK_TYPE, domain_of_scene

OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")
# MemCo's list file names use "living" for the living-room domain.
MEMCO_DOMAIN = {
    "kitchen": "kitchen",
    "living": "living_room",
    "living_room": "living_room",
    "bedroom": "bedroom",
    "bathroom": "bathroom",
}


@dataclass(frozen=True)
class GameRef:
    key: str  # "<split>/<task folder>/<trial>", the same for every copy of the data
    game_file: str
    split: str
    domain: str
    scene: int
    task_type: str  # ALFRED name
    pddl_params: dict
    goal: str
    expert_seed: str | None = None  # generated games: the seed the expert won with


def split_root(data_path: Path) -> Path | None:
    """The folder holding train/valid_seen/valid_unseen, or None."""
    for cand in (data_path / "json_2.1.1", data_path):
        if all((cand / s).is_dir() for s in ("train",)) and any(
            (cand / s).is_dir() for s in OFFICIAL_SPLITS[1:]
        ):
            return cand
    return None


def scene_of(task_folder: str) -> int | None:
    tail = task_folder.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def game_key(game_file: str) -> str | None:
    """ "<split>/<task folder>/<trial>" from any path to a game file (local or MemCo's)."""
    parts = Path(game_file).parts
    for i, p in enumerate(parts):
        if p in OFFICIAL_SPLITS and i + 2 < len(parts):
            return "/".join(parts[i : i + 3])
    return None


def _goal_text(game_dir: Path, traj: dict) -> str:
    if traj.get("task_desc"):
        return f"Your task is to: {traj['task_desc']}."
    try:
        grammar = json.loads((game_dir / "game.tw-pddl").read_text()).get("grammar", "")
        marker = "Your task is to: "
        if marker in grammar:
            text = grammar.split(marker, 1)[1].split('"', 1)[0].strip()
            if "UNKNOWN GOAL" not in text:
                return marker + text.rstrip(".") + "."
    except (OSError, json.JSONDecodeError):
        pass
    p = traj.get("pddl_params", {})
    return (
        f"Your task is to: {traj.get('task_type', '').replace('_', ' ')} "
        f"{p.get('object_target', '')} {p.get('parent_target', '')}".strip()
    )


def scan_split(root: Path, split: str, task_types: set[str] | None = None) -> list[GameRef]:
    """Solvable games of one split, sorted by key; skips movable/sliced trajectories like
    ALFWorld's own loader."""
    refs = []
    base = root / split
    if not base.is_dir():
        return refs
    for traj_file in sorted(base.glob("*/*/traj_data.json")):
        game_dir = traj_file.parent
        task_folder = game_dir.parent.name
        if "movable" in task_folder or "Sliced" in task_folder:
            continue
        game_file = game_dir / "game.tw-pddl"
        if not game_file.exists():
            continue
        traj = json.loads(traj_file.read_text())
        if task_types is not None and traj.get("task_type") not in task_types:
            continue
        scene = scene_of(task_folder)
        domain = domain_of_scene(scene) if scene is not None else None
        if domain is None:
            continue
        if not _solvable(game_file):
            continue
        refs.append(
            GameRef(
                key=f"{split}/{task_folder}/{game_dir.name}",
                game_file=str(game_file),
                split=split,
                domain=domain,
                scene=scene,
                task_type=traj["task_type"],
                pddl_params=dict(traj.get("pddl_params", {})),
                goal=_goal_text(game_dir, traj),
                expert_seed=(traj.get("generator") or {}).get("expert_seed"),
            )
        )
    return refs


def _solvable(game_file: Path) -> bool:
    # The flag sits near the end of a large JSON; read it without keeping the text.
    try:
        return bool(json.loads(game_file.read_text()).get("solvable", False))
    except (OSError, json.JSONDecodeError):
        return False


def read_task_list(path: Path) -> dict[str, list[tuple[str, str]]]:
    """MemCo task lists -> {split: [(game key, domain), ...]} in list order.

    ``path`` is one ``<domain>__<split>.json`` file or a folder of them; each entry's
    ``env_kwargs.gamefile`` identifies the game. In a folder, ``merged__*`` files (the same
    games again) and ``manifest.json`` are skipped, and a game listed twice is kept once.
    """
    if path.is_dir():
        files = [
            f
            for f in sorted(path.glob("*.json"))
            if "__" in f.stem and not f.stem.startswith("merged__")
        ]
    else:
        files = [path]
    out: dict[str, list[tuple[str, str]]] = {}
    seen: set[str] = set()
    for f in files:
        entries = json.loads(f.read_text())
        if isinstance(entries, dict):
            entries = entries.get("tasks") or entries.get("games") or []
        for e in entries:
            gamefile = (e.get("env_kwargs") or {}).get("gamefile") or e.get("gamefile")
            key = game_key(gamefile) if gamefile else None
            if key is None:
                raise ValueError(f"{f}: an entry has no env_kwargs.gamefile in the official layout")
            if key in seen:
                continue
            seen.add(key)
            split = key.split("/", 1)[0]
            dom = e.get("scene_domain") or e.get("subset_group") or f.stem.split("__")[0]
            domain = MEMCO_DOMAIN.get(dom) or domain_of_scene(scene_of(key.split("/")[1]) or -1)
            out.setdefault(split, []).append((key, domain))
    return out


def short_type(task_type: str) -> str:
    return SHORT_TASK_TYPE.get(task_type, task_type)
