"""Seeded generator of the embedded household suite (ALFWorld-format game folders).

A *layout* is a scene instance (which receptacles, how many) fixed by (seed, domain, layout
number); a *game* places objects in a layout and picks a goal. Splits: ``train`` games use the
train layouts, ``valid_seen`` (familiar layout) new games on the train layouts, ``valid_unseen``
(held-out layout) games on layouts never used in train. Every game is played by the engine's
handcoded expert before it is kept; its action list is the walkthrough.

Folders follow the official layout, ``<split>/<task_type>-<Obj>-None-<Parent>-<scene>/trial_<k>``
with ``game.tw-pddl`` and ``traj_data.json``, so the official loader reads them too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memarena.core.cache_build import CacheInvalid, build_once
from memarena.core.progress import Progress
from memarena.envs.alfworld.scenes import (
    LAMP,
    LAMP_HOLDERS,
    NOT_A_TARGET,
    OPENABLE,
    REQUIRED_OTYPES,
    REQUIRED_RTYPES,
    SCENE_RANGES,
    SCENES,
    TASK_TYPES,
)

log = logging.getLogger(__name__)

GEN_VERSION = 2
SPLITS = ("train", "valid_seen", "valid_unseen")


@dataclass(frozen=True)
class SuiteSpec:
    domains: tuple[str, ...]
    task_types: tuple[str, ...]  # short names
    n_train: int  # games per domain
    n_valid_seen: int
    n_valid_unseen: int
    n_layouts: int  # layouts per domain
    n_heldout_layouts: int  # of which held out of train
    seed: int
    max_expert_steps: int

    def key(self) -> str:
        parts = [
            f"v{GEN_VERSION}",
            f"s{self.seed}",
            "-".join(self.domains),
            "-".join(sorted(self.task_types)),
            f"n{self.n_train}.{self.n_valid_seen}.{self.n_valid_unseen}",
            f"l{self.n_layouts}.{self.n_heldout_layouts}",
            f"e{self.max_expert_steps}",
        ]
        return hashlib.sha1("|".join(parts).encode()).hexdigest()[:12]


def _mangle_id(cls: str, i: int) -> str:
    if cls in ("SinkBasin", "BathtubBasin"):
        return f"{cls[:-5]}_bar_{i:02d}_bar_{cls}"
    return f"{cls}_bar_{i:02d}"


def _facts():
    from memarena.envs.alfworld.engine import alfred_constants

    constants = alfred_constants()
    return constants.VAL_RECEPTACLE_OBJECTS, constants.VAL_ACTION_OBJECTS


def make_layout(spec_seed: int, domain: str, layout: int) -> dict[str, int]:
    """Receptacle class -> count for one layout (deterministic)."""
    rng = random.Random(f"layout/{spec_seed}/{domain}/{layout}")
    scene = SCENES[domain]
    counts = {c: rng.randint(lo, hi) for c, (lo, hi) in scene.receptacles.items()}
    if domain in ("living_room", "bedroom") and not any(counts.get(h, 0) for h in LAMP_HOLDERS):
        counts["SideTable"] = 1
    return {c: n for c, n in counts.items() if n > 0}


def _choose_goal(rng: random.Random, domain: str, task_type: str, layout: dict[str, int]):
    """(object class, parent class or '') feasible in the layout, or None."""
    can_hold, actions = _facts()
    scene = SCENES[domain]
    props = {
        "pick_clean_then_place": set(actions["Cleanable"]),
        "pick_heat_then_place": set(actions["Heatable"]),
        "pick_cool_then_place": set(actions["Coolable"]),
    }
    objs = [o for o in scene.objects if o in props.get(task_type, set(scene.objects))]
    if task_type == "pick_clean_then_place" and "SinkBasin" not in layout:
        return None
    rng.shuffle(objs)
    for obj in objs:
        if task_type == "look_at_obj_in_light":
            sources = [r for r in layout if obj in can_hold.get(r, ())]
            if sources:
                return obj, ""
            continue
        parents = [
            r for r in sorted(layout) if r not in NOT_A_TARGET and obj in can_hold.get(r, ())
        ]
        sources = [r for r in layout if obj in can_hold.get(r, ())]
        if parents and sources:
            parent = rng.choice(parents)
            if any(s != parent for s in sources):
                return obj, parent
    return None


def build_game(
    rng: random.Random, domain: str, scene_id: int, layout: dict[str, int], task_type: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(game json without walkthrough, traj_data) or None when the goal is infeasible here."""
    from memarena.envs.alfworld.engine import goal_library, load_logic

    can_hold, actions = _facts()
    goal = _choose_goal(rng, domain, task_type, layout)
    if goal is None:
        return None
    target, parent = goal
    receps = [(c, i) for c in sorted(layout) for i in range(1, layout[c] + 1)]
    rids = {(c, i): _mangle_id(c, i) for c, i in receps}
    loc_of = {rid: f"loc_bar_{k + 1:02d}" for k, rid in enumerate(rids.values())}

    # Objects: targets (not initially in a parent), then distractors.
    n_targets = 2 if task_type == "pick_two_obj_and_place" else 1
    n_targets += rng.randint(0, 1)
    placements: list[tuple[str, tuple[str, int]]] = []

    def place(cls: str, avoid: str = "") -> bool:
        spots = [r for r in receps if cls in can_hold.get(r[0], ()) and r[0] != avoid]
        if not spots:
            return False
        placements.append((cls, rng.choice(spots)))
        return True

    for _ in range(n_targets):
        if not place(target, avoid=parent):
            return None
    others = [o for o in SCENES[domain].objects if o != target]
    for cls in rng.sample(others, k=min(len(others), rng.randint(5, 9))):
        for _ in range(rng.randint(1, 2)):
            place(cls)
    lamp = None
    if task_type == "look_at_obj_in_light":
        holders = [r for r in receps if r[0] in LAMP_HOLDERS]
        if not holders:
            return None
        lamp = ("DeskLamp_bar_01", rng.choice(holders))

    counter: dict[str, int] = {}
    objects: list[tuple[str, str, tuple[str, int]]] = []  # (id, class, receptacle)
    for cls, r in placements:
        counter[cls] = counter.get(cls, 0) + 1
        objects.append((_mangle_id(cls, counter[cls]), cls, r))

    otypes = sorted({c for _, c, _ in objects} | set(REQUIRED_OTYPES) | ({LAMP} if lamp else set()))
    rtypes = sorted(set(layout) | set(REQUIRED_RTYPES))
    lines = [
        "(define (problem plan_memarena)",
        "  (:domain alfred)",
        "  (:objects",
        "    agent1 - agent",
    ]
    lines += [f"    {loc} - location" for loc in ["loc_bar_00", *loc_of.values()]]
    lines += [f"    {rid} - receptacle" for rid in rids.values()]
    lines += [f"    {oid} - object" for oid, _, _ in objects]
    if lamp:
        lines.append(f"    {lamp[0]} - object")
    lines += [f"    {t}Type - otype" for t in otypes]
    lines += [f"    {t}Type - rtype" for t in rtypes]
    lines += ["  )", "  (:init", "    (atLocation agent1 loc_bar_00)"]
    for (c, _i), rid in rids.items():
        lines.append(f"    (receptacleAtLocation {rid} {loc_of[rid]})")
        lines.append(f"    (receptacleType {rid} {c}Type)")
        if c in OPENABLE:
            lines.append(f"    (openable {rid})")
    for oid, cls, r in objects:
        rid = rids[r]
        lines += [
            f"    (objectType {oid} {cls}Type)",
            f"    (inReceptacle {oid} {rid})",
            f"    (objectAtLocation {oid} {loc_of[rid]})",
            f"    (pickupable {oid})",
        ]
        for prop, key in (
            ("cleanable", "Cleanable"),
            ("heatable", "Heatable"),
            ("coolable", "Coolable"),
        ):
            if cls in actions[key]:
                lines.append(f"    ({prop} {oid})")
    if lamp:
        lid, r = lamp
        lines += [
            f"    (objectType {lid} {LAMP}Type)",
            f"    (inReceptacle {lid} {rids[r]})",
            f"    (objectAtLocation {lid} {loc_of[rids[r]]})",
            f"    (toggleable {lid})",
        ]
    for rt in sorted(layout):
        for ot in otypes:
            if ot in can_hold.get(rt, ()):
                lines.append(f"    (canContain {rt}Type {ot}Type)")
    lines.append("  )")
    alfred_type = TASK_TYPES[task_type]
    entry = goal_library()[alfred_type]
    goal_pddl = entry["pddl"].format(obj=target, recep=parent, toggle=LAMP).replace("#", "-")
    problem = "\n".join(lines) + "\n" + goal_pddl.strip() + "\n"

    template = rng.choice(entry["templates"])
    task_desc = template.format(obj=target.lower(), recep=parent.lower(), toggle=LAMP.lower())
    domain_pddl, grammar = load_logic()
    game = {
        "pddl_domain": domain_pddl,
        "grammar": grammar.replace("UNKNOWN GOAL", task_desc),
        "pddl_problem": problem,
    }
    traj = {
        "task_type": alfred_type,
        "scene": {"scene_num": scene_id, "domain": domain},
        "pddl_params": {
            "object_target": target,
            "parent_target": parent,
            "toggle_target": LAMP if task_type == "look_at_obj_in_light" else "",
            "mrecep_target": "",
            "object_sliced": False,
        },
        "task_desc": task_desc,
        "generator": {"name": "memarena", "version": GEN_VERSION},
    }
    return game, traj


def expert_walkthrough(game_dir: Path, max_steps: int, seed: str) -> list[str] | None:
    """Play the game with the handcoded expert; its actions if it wins within max_steps."""
    from memarena.envs.alfworld.engine import (
        private_random_state,
        seeded_global_random,
        start_game,
    )

    env = start_game(game_dir / "game.tw-pddl")
    actions: list[str] = []
    try:
        with seeded_global_random(private_random_state(seed)):
            state = env.reset()
            for _ in range(max_steps):
                plan = state.get("extra.expert_plan") or []
                if not plan:
                    return None
                actions.append(plan[0])
                state, _, done = env.step(plan[0])
                if state.get("won"):
                    return actions
                if done:
                    return None
    except Exception as exc:  # the expert raises on timeouts / dead ends
        log.debug("expert failed on %s: %s", game_dir, exc)
        return None
    finally:
        env.close()
    return None


def _write(game_dir: Path, game: dict[str, Any], traj: dict[str, Any]) -> None:
    game_dir.mkdir(parents=True, exist_ok=True)
    (game_dir / "traj_data.json").write_text(json.dumps(traj, indent=1))
    (game_dir / "game.tw-pddl").write_text(json.dumps(game))


def _play(args: tuple[str, int, str]) -> list[str] | None:
    game_dir, max_steps, seed = args
    return expert_walkthrough(Path(game_dir), max_steps, seed)


def generate_suite(spec: SuiteSpec, root: Path, workers: int = 1) -> Path:
    """Write the suite under ``root/<spec key>`` (reused when complete); return that folder.

    Candidates are built in a fixed order and checked by the expert in batches (``workers``
    processes); they are accepted in candidate order, so the suite does not depend on
    ``workers``. Several processes may ask for one suite at once: one builds it (under a lock,
    into a private folder renamed into place), the others wait and reuse it; a cached suite is
    used only when its manifest and ``suite.json``'s game list verify, else it is rebuilt.
    """
    out = Path(root) / spec.key()
    return build_once(
        out,
        lambda tmp: _build_suite(spec, tmp, out, workers),
        what="the household suite",
        check=check_suite,
    )


def check_suite(folder: Path) -> None:
    """Raise :class:`CacheInvalid` unless every game ``suite.json`` lists has its files."""
    path = folder / "suite.json"
    try:
        games = json.loads(path.read_text())["games"]
        listed = [g for split in SPLITS for g in games[split]]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CacheInvalid(
            f"{path} is missing or unreadable ({type(err).__name__}: {err})"
        ) from None
    for game in listed:
        for name in ("game.tw-pddl", "traj_data.json"):
            if not (folder / game / name).is_file():
                raise CacheInvalid(
                    f"{path} lists {game} but {folder / game / name} is missing "
                    f"({len(listed)} games listed)"
                )


def _build_suite(spec: SuiteSpec, tmp: Path, out: Path, workers: int) -> None:
    tmp.mkdir(parents=True)
    counts = {
        "train": spec.n_train,
        "valid_seen": spec.n_valid_seen,
        "valid_unseen": spec.n_valid_unseen,
    }
    n_train_layouts = spec.n_layouts - spec.n_heldout_layouts
    manifest: dict[str, list[str]] = {s: [] for s in SPLITS}
    rejected = {"infeasible": 0, "expert_failed": 0}
    n_domains = sum(any(t in SCENES[d].task_types for t in spec.task_types) for d in spec.domains)
    total = n_domains * sum(counts.values())
    log.info("generating the household suite (%d games, %d worker(s)) into %s", total,
             max(1, workers), out)  # fmt: skip
    progress = Progress(total, "household suite", unit="games")
    pool = None
    if workers > 1:
        import multiprocessing

        pool = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ).Pool(workers)
    try:
        for domain in spec.domains:
            types = [t for t in spec.task_types if t in SCENES[domain].task_types]
            if not types:
                continue
            first_scene = SCENE_RANGES[domain][0]
            for split in SPLITS:
                layouts = (
                    list(range(n_train_layouts, spec.n_layouts))
                    if split == "valid_unseen"
                    else list(range(n_train_layouts))
                )
                attempt = 0
                while len(manifest_for(manifest, split, domain)) < counts[split]:
                    if attempt > 20 * max(1, counts[split]) + 20:
                        raise RuntimeError(
                            f"household suite: cannot make {split} games for {domain}"
                        )
                    batch = []
                    while (
                        len(batch) < max(1, workers) and attempt <= 20 * max(1, counts[split]) + 20
                    ):
                        k = attempt
                        attempt += 1
                        rng = random.Random(f"game/{spec.seed}/{domain}/{split}/{k}")
                        layout_no = layouts[k % len(layouts)]
                        task_type = types[(k + k // len(layouts)) % len(types)]
                        scene_id = first_scene + layout_no
                        built = build_game(
                            rng,
                            domain,
                            scene_id,
                            make_layout(spec.seed, domain, layout_no),
                            task_type,
                        )
                        if built is None:
                            rejected["infeasible"] += 1
                            continue
                        game, traj = built
                        p = traj["pddl_params"]
                        name = (
                            f"{traj['task_type']}-{p['object_target']}-None-"
                            f"{p['parent_target'] or p['toggle_target']}-{scene_id}"
                        )
                        game_dir = tmp / split / name / f"trial_{k:05d}"
                        _write(game_dir, game, traj)
                        batch.append(
                            (
                                game_dir,
                                game,
                                traj,
                                (
                                    str(game_dir),
                                    spec.max_expert_steps,
                                    f"{spec.seed}/{split}/{name}/{k}",
                                ),
                            )
                        )
                    jobs = [b[3] for b in batch]
                    walks = pool.map(_play, jobs) if pool else [_play(j) for j in jobs]
                    for (game_dir, game, traj, _), walk in zip(batch, walks, strict=True):
                        full = len(manifest_for(manifest, split, domain)) >= counts[split]
                        if walk is None or full:
                            rejected["expert_failed"] += walk is None
                            shutil.rmtree(game_dir)
                            if not any(game_dir.parent.iterdir()):
                                game_dir.parent.rmdir()
                            continue
                        game["solvable"] = True
                        game["walkthrough"] = walk
                        traj["generator"]["expert_seed"] = job_seed(game_dir, batch)
                        _write(game_dir, game, traj)
                        manifest[split].append(str(game_dir.relative_to(tmp)))
                        progress.update()
    finally:
        progress.close()
        if pool is not None:
            pool.close()
            pool.join()
    (tmp / "suite.json").write_text(
        json.dumps({"spec": spec.__dict__, "games": manifest, "rejected": rejected}, indent=1)
    )


def job_seed(game_dir: Path, batch: list) -> str:
    return next(b[3][2] for b in batch if b[0] == game_dir)


def manifest_for(manifest: dict[str, list[str]], split: str, domain: str) -> list[str]:
    lo, hi = SCENE_RANGES[domain]
    return [g for g in manifest[split] if lo <= int(g.split("/")[1].rsplit("-", 1)[1]) <= hi]
