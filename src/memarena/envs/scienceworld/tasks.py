"""ScienceWorld's 30 task templates and MemCo's ten task-family groups.

MemCo (``v4_id_grouped`` subsets) gives one agent per task family; the family is the major
number of ScienceWorld's task id ("1-1" boil -> family 1). ``FAMILIES`` holds that table with a
readable name per family; ``Task.domain`` is that name under ``partition="memco_families"`` and
the task name under ``partition="task"``.

MemCo's split per template: the first ``max_train_variations_per_task`` (10) of the official
train variations and the first ``max_test_variations_per_task`` (2) of the official test
variations (identify-life-stages-1/2 have only 6/4 train variations).
"""

from __future__ import annotations

from dataclasses import dataclass

from memarena.core.errors import ConfigError

# family id -> (name, task names in ScienceWorld's id order)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "1": (
        "changes_of_state",
        ("boil", "melt", "freeze", "change-the-state-of-matter-of"),
    ),
    "2": (
        "thermometer_melting_point",
        (
            "use-thermometer",
            "measure-melting-point-known-substance",
            "measure-melting-point-unknown-substance",
        ),
    ),
    "3": (
        "electricity_conductivity",
        (
            "power-component",
            "power-component-renewable-vs-nonrenewable-energy",
            "test-conductivity",
            "test-conductivity-of-unknown-substances",
        ),
    ),
    "4": (
        "find_living_nonliving",
        ("find-living-thing", "find-non-living-thing", "find-plant", "find-animal"),
    ),
    "5": ("grow_plant_fruit", ("grow-plant", "grow-fruit")),
    "6": (
        "chemistry_mix_paint",
        (
            "chemistry-mix",
            "chemistry-mix-paint-secondary-color",
            "chemistry-mix-paint-tertiary-color",
        ),
    ),
    "7": (
        "lifespan",
        (
            "lifespan-longest-lived",
            "lifespan-shortest-lived",
            "lifespan-longest-lived-then-shortest-lived",
        ),
    ),
    "8": ("life_stages", ("identify-life-stages-1", "identify-life-stages-2")),
    "9": (
        "inclined_plane",
        (
            "inclined-plane-determine-angle",
            "inclined-plane-friction-named-surfaces",
            "inclined-plane-friction-unnamed-surfaces",
        ),
    ),
    "10": (
        "mendelian_genetics",
        ("mendelian-genetics-known-plant", "mendelian-genetics-unknown-plant"),
    ),
}

TASK_NAMES: tuple[str, ...] = tuple(t for _, ts in FAMILIES.values() for t in ts)
TASK_FAMILY: dict[str, str] = {t: fid for fid, (_, ts) in FAMILIES.items() for t in ts}
FAMILY_NAME: dict[str, str] = {fid: name for fid, (name, _) in FAMILIES.items()}
PARTITIONS = ("memco_families", "task")
ELECTRICAL_TASKS = frozenset(t for t in TASK_NAMES if "power-component" in t or "conductivity" in t)


@dataclass(frozen=True)
class TaskRef:
    """One (task template, variation) pair, plus the description when a task list gives it."""

    task_name: str
    variation: int
    description: str = ""
    subgoals: tuple[str, ...] = ()  # AgentBoard's, for subgoal progress


def domain_of(task_name: str, partition: str) -> str:
    if partition == "task":
        return task_name
    return FAMILY_NAME[TASK_FAMILY[task_name]]


def check_task_names(names: list[str] | None) -> list[str]:
    if names is None:
        return list(TASK_NAMES)
    if isinstance(names, str):
        names = [names]
    bad = [n for n in names if n not in TASK_FAMILY]
    if bad or not names:
        raise ConfigError(
            f"memarena: env.task_names has unknown ScienceWorld task {bad[0] if bad else None!r}; "
            f"valid: {list(TASK_NAMES)} (or null for all 30)."
        )
    return list(dict.fromkeys(names))
