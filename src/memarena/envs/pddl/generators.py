"""Seeded problem generators for the four domains and disjoint train/test splits.

Each generator draws a size uniformly from its configured ranges and returns the objects,
initial atoms and goal atoms of one problem; :func:`generate_split` writes them as PDDL and
drops duplicates by canonical content (sorted initial and goal atoms, names ignored). The test
split is drawn first from its own random stream, so it does not change when ``n_train``
changes; the train split skips every problem of the test split.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from memarena.core.errors import ConfigError

# name -> (min, max) of every size knob, and the smallest value that makes sense.
DEFAULT_SIZES: dict[str, dict[str, tuple[int, int]]] = {
    "gripper": {"balls": (4, 10), "rooms": (2, 3)},
    "blocksworld": {"blocks": (3, 6)},
    "barman": {"cocktails": (1, 3), "goals": (1, 2), "ingredients": (3, 3)},
    "tyreworld": {"wheels": (1, 3)},
}
_MIN_SIZE = {"rooms": 2, "blocks": 2, "ingredients": 2}

Objects = list[tuple[str, str | None]]  # (name, type or None for untyped domains)
Drawn = tuple[Objects, list[str], list[str], dict[str, int]]


@dataclass(frozen=True)
class GeneratedProblem:
    domain: str
    name: str
    pddl: str
    key: str  # canonical content, for deduplication
    size: dict[str, int]
    goal: tuple[str, ...]


def _atom(*parts: str) -> str:
    return "(" + " ".join(parts) + ")"


def _draw(rng: random.Random, sizes: Mapping[str, tuple[int, int]], knob: str) -> int:
    lo, hi = sizes[knob]
    return rng.randint(lo, hi)


def _gripper(rng: random.Random, sizes: Mapping[str, tuple[int, int]]) -> Drawn:
    n_balls, n_rooms = _draw(rng, sizes, "balls"), _draw(rng, sizes, "rooms")
    rooms = [f"room{chr(ord('a') + i)}" for i in range(n_rooms)]
    balls = [f"ball{i}" for i in range(1, n_balls + 1)]
    grippers = ["left", "right"]
    init = [_atom("room", r) for r in rooms] + [_atom("ball", b) for b in balls]
    init += [_atom("gripper", g) for g in grippers] + [_atom("free", g) for g in grippers]
    init.append(_atom("at-robby", rng.choice(rooms)))
    goal = []
    for b in balls:  # most balls must change rooms; every ball is named in the goal
        start = rng.choice(rooms)
        init.append(_atom("at", b, start))
        moves = rng.random() < 0.75
        goal.append(
            _atom("at", b, rng.choice([r for r in rooms if r != start] if moves else [start]))
        )
    objects: Objects = [(o, None) for o in rooms + balls + grippers]
    return objects, init, goal, {"balls": n_balls, "rooms": n_rooms}


def _towers(rng: random.Random, blocks: list[str], p_new: float) -> list[list[str]]:
    """Random towers (each listed bottom to top); ``p_new``: chance a block starts a tower."""
    order = blocks[:]
    rng.shuffle(order)
    towers = [[order[0]]]
    for b in order[1:]:
        if rng.random() < p_new:
            towers.append([b])
        else:
            towers[-1].append(b)
    return towers


def _blocksworld(rng: random.Random, sizes: Mapping[str, tuple[int, int]]) -> Drawn:
    n = _draw(rng, sizes, "blocks")
    blocks = [f"b{i}" for i in range(1, n + 1)]
    init = [_atom("arm-empty")]
    for tower in _towers(rng, blocks, 0.5):
        init.append(_atom("on-table", tower[0]))
        init += [_atom("on", top, below) for below, top in pairwise(tower)]
        init.append(_atom("clear", tower[-1]))
    stacked: list[str] = []
    while not stacked:
        stacked = [
            _atom("on", top, below)
            for tower in _towers(rng, blocks, 0.3)
            for below, top in pairwise(tower)
        ]
    goal = [a for a in stacked if rng.random() < 0.85] or [rng.choice(stacked)]
    return [(b, None) for b in blocks], init, goal, {"blocks": n}


def _barman(rng: random.Random, sizes: Mapping[str, tuple[int, int]]) -> Drawn:
    n_ing, n_cocktails = _draw(rng, sizes, "ingredients"), _draw(rng, sizes, "cocktails")
    n_goals = _draw(rng, sizes, "goals")
    ingredients = [f"ingredient{i}" for i in range(1, n_ing + 1)]
    dispensers = [f"dispenser{i}" for i in range(1, n_ing + 1)]
    cocktails = [f"cocktail{i}" for i in range(1, n_cocktails + 1)]
    shots = [f"shot{i}" for i in range(1, n_goals + 2)]  # one spare shot to work with
    levels = ["l0", "l1", "l2"]
    pairs = [(a, b) for a in ingredients for b in ingredients if a != b]
    recipes = rng.sample(pairs, n_cocktails)
    init = [_atom("ontable", c) for c in ["shaker1", *shots]]
    init += [_atom("clean", c) for c in ["shaker1", *shots]]
    init += [_atom("empty", c) for c in ["shaker1", *shots]]
    init += [_atom("dispenses", d, i) for d, i in zip(dispensers, ingredients, strict=True)]
    init += [_atom("handempty", h) for h in ("left", "right")]
    init += [_atom("shaker-empty-level", "shaker1", "l0"), _atom("shaker-level", "shaker1", "l0")]
    init += [_atom("next", a, b) for a, b in pairwise(levels)]
    for c, (p1, p2) in zip(cocktails, recipes, strict=True):
        init += [_atom("cocktail-part1", c, p1), _atom("cocktail-part2", c, p2)]
    goal = []
    for shot in rng.sample(shots, n_goals):
        drink = rng.choice(ingredients) if rng.random() < 0.25 else rng.choice(cocktails)
        goal.append(_atom("contains", shot, drink))
    objects: Objects = [("shaker1", "shaker"), ("left", "hand"), ("right", "hand")]
    objects += [(s, "shot") for s in shots] + [(i, "ingredient") for i in ingredients]
    objects += [(c, "cocktail") for c in cocktails] + [(d, "dispenser") for d in dispensers]
    objects += [(lv, "level") for lv in levels]
    size = {"ingredients": n_ing, "cocktails": n_cocktails, "goals": n_goals}
    return objects, init, goal, size


def _tyreworld(rng: random.Random, sizes: Mapping[str, tuple[int, int]]) -> Drawn:
    n = _draw(rng, sizes, "wheels")
    init = [_atom("in", tool, "boot") for tool in ("jack", "pump", "wrench")]
    init += [_atom("unlocked", "boot"), _atom("closed", "boot")]
    objects: Objects = [("boot", "container")]
    candidates = []
    for i in range(1, n + 1):
        hub, nuts, flat, spare = f"the-hub{i}", f"nuts{i}", f"w{i}", f"r{i}"
        objects += [(hub, "hub"), (nuts, "nut"), (spare, "wheel"), (flat, "wheel")]
        init += [_atom("intact", spare), _atom("in", spare, "boot"), _atom("not-inflated", spare)]
        init += [_atom("on", flat, hub), _atom("on-ground", hub)]
        init += [_atom("tight", nuts, hub), _atom("fastened", hub)]
        candidates += [_atom("on", spare, hub), _atom("inflated", spare), _atom("in", flat, "boot")]
    goal = [a for a in candidates if rng.random() < 0.8] or [rng.choice(candidates)]
    return objects, init, goal, {"wheels": n}


GENERATORS: dict[str, Callable[[random.Random, Mapping[str, tuple[int, int]]], Drawn]] = {
    "gripper": _gripper,
    "blocksworld": _blocksworld,
    "barman": _barman,
    "tyreworld": _tyreworld,
}
PDDL_DOMAIN_NAMES = {
    "gripper": "gripper-strips",
    "blocksworld": "blocksworld-4ops",
    "barman": "barman",
    "tyreworld": "tyreworld",
}


def _objects_pddl(objects: Objects) -> str:
    if all(t is None for _, t in objects):
        return " ".join(name for name, _ in objects)
    groups: dict[str, list[str]] = {}
    for name, typ in objects:
        groups.setdefault(typ or "object", []).append(name)
    return "\n    ".join(f"{' '.join(names)} - {typ}" for typ, names in groups.items())


def problem_pddl(domain: str, name: str, objects: Objects, init: list[str], goal: list[str]) -> str:
    """Write one problem in PDDL."""
    init_s = "\n    ".join(init)
    goal_s = "\n      ".join(goal)
    return (
        f"(define (problem {name})\n  (:domain {PDDL_DOMAIN_NAMES[domain]})\n"
        f"  (:objects\n    {_objects_pddl(objects)})\n"
        f"  (:init\n    {init_s})\n"
        f"  (:goal\n    (and\n      {goal_s})))\n"
    )


def resolve_sizes(domain: str, overrides: Mapping[str, Any] | None) -> dict[str, tuple[int, int]]:
    """Default size ranges updated with the config's; raises ConfigError on bad values."""
    sizes = dict(DEFAULT_SIZES[domain])
    for knob, value in (overrides or {}).items():
        key = f"env.sizes.{domain}.{knob}"
        if knob not in sizes:
            raise ConfigError(
                f"memarena: {key} is not a size of the {domain} generator; "
                f"valid sizes: {sorted(sizes)}."
            )
        if isinstance(value, int):
            lo, hi = value, value
        elif isinstance(value, list | tuple) and len(value) == 2:
            lo, hi = value
        else:
            lo, hi = None, None
        if not (isinstance(lo, int) and isinstance(hi, int)) or lo > hi:
            raise ConfigError(
                f"memarena: {key}={value} must be an integer or a range [min, max] with "
                f"min <= max, e.g. {key}=[{sizes[knob][0]},{sizes[knob][1]}]."
            )
        if lo < _MIN_SIZE.get(knob, 1):
            raise ConfigError(
                f"memarena: {key} starts at {lo}; it must be at least {_MIN_SIZE.get(knob, 1)}."
            )
        sizes[knob] = (lo, hi)
    if domain == "barman":
        lo_ing = sizes["ingredients"][0]
        if sizes["cocktails"][1] > lo_ing * (lo_ing - 1):
            raise ConfigError(
                f"memarena: env.sizes.barman.cocktails allows {sizes['cocktails'][1]} cocktails "
                f"but {lo_ing} ingredients make at most {lo_ing * (lo_ing - 1)} distinct "
                "recipes; lower cocktails or raise ingredients."
            )
    return sizes


def canonical_key(init: Iterable[str], goal: Iterable[str]) -> str:
    """Problem identity for deduplication: sorted initial and goal atoms."""
    return "|".join(sorted(set(init))) + "||" + "|".join(sorted(set(goal)))


def generate_split(
    domain: str,
    split: str,
    n: int,
    seed: int,
    sizes: Mapping[str, tuple[int, int]],
    exclude: frozenset[str] = frozenset(),
) -> list[GeneratedProblem]:
    """``n`` distinct problems whose canonical content is not in ``exclude``."""
    rng = random.Random(f"memarena-pddl/{domain}/{split}/{seed}")
    seen = set(exclude)
    out: list[GeneratedProblem] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 100 * n + 1000:
            raise ConfigError(
                f"memarena: could only generate {len(out)} distinct {domain} {split} problems "
                f"of {n} (env.n_{split}); widen env.sizes.{domain} or lower env.n_{split}."
            )
        objects, init, goal, size = GENERATORS[domain](rng, sizes)
        if set(goal) <= set(init):
            continue  # already solved
        key = canonical_key(init, goal)
        if key in seen:
            continue
        seen.add(key)
        name = f"{domain}-{split}-{len(out):03d}"
        out.append(
            GeneratedProblem(
                domain,
                name,
                problem_pddl(domain, name, objects, init, goal),
                key,
                size,
                tuple(goal),
            )
        )
    return out


def generate_splits(
    domain: str,
    n_train: int,
    n_test: int,
    seed: int,
    sizes: Mapping[str, tuple[int, int]],
    exclude: frozenset[str] = frozenset(),
) -> dict[str, list[GeneratedProblem]]:
    """Disjoint ``train`` and ``test`` splits of one domain (train also avoids ``exclude``)."""
    test = generate_split(domain, "test", n_test, seed, sizes)
    train_exclude = exclude | frozenset(p.key for p in test)
    train = generate_split(domain, "train", n_train, seed, sizes, exclude=train_exclude)
    return {"train": train, "test": test}
