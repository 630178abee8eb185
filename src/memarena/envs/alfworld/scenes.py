"""Scene catalogue of the embedded household suite (written for this project).

Four scene domains as in MemCo's ALFWorld partition. Each domain lists the receptacle classes a
layout may hold (with min/max counts) and the small objects that may appear in it. Class names
are ALFRED's (the handcoded expert and the goal templates key on them); what a receptacle can
hold and which objects can be cleaned/heated/cooled comes from ``alfworld.gen.constants``.
"""

from __future__ import annotations

from dataclasses import dataclass

# MemCo's scene id ranges of the official data (trial folder "...-<scene>").
SCENE_RANGES = {
    "kitchen": (1, 30),
    "living_room": (201, 230),
    "bedroom": (301, 330),
    "bathroom": (401, 430),
}
DOMAINS = tuple(SCENE_RANGES)

# Short names (config) -> ALFRED task types (traj_data.json, goal library, expert).
TASK_TYPES = {
    "pick_and_place": "pick_and_place_simple",
    "pick_clean_then_place": "pick_clean_then_place_in_recep",
    "pick_heat_then_place": "pick_heat_then_place_in_recep",
    "pick_cool_then_place": "pick_cool_then_place_in_recep",
    "look_at_obj_in_light": "look_at_obj_in_light",
    "pick_two_obj_and_place": "pick_two_obj_and_place",
}
SHORT_TASK_TYPE = {v: k for k, v in TASK_TYPES.items()}

OPENABLE = frozenset({"Fridge", "Cabinet", "Microwave", "Drawer", "Safe", "Box"})
# The domain file names these types in preconditions; every problem declares them.
REQUIRED_RTYPES = ("SinkBasin", "Microwave", "Fridge")
REQUIRED_OTYPES = ("Knife", "ButterKnife")
# Appliances are tools, not goal receptacles.
NOT_A_TARGET = frozenset({"SinkBasin", "Microwave", "Fridge", "BathtubBasin", "GarbageCan"})
LAMP = "DeskLamp"
LAMP_HOLDERS = ("Desk", "SideTable", "Dresser")


@dataclass(frozen=True)
class SceneSpec:
    receptacles: dict[str, tuple[int, int]]
    objects: tuple[str, ...]
    task_types: tuple[str, ...]  # short names feasible here


SCENES: dict[str, SceneSpec] = {
    "kitchen": SceneSpec(
        receptacles={
            "CounterTop": (1, 2),
            "Cabinet": (3, 6),
            "Drawer": (2, 4),
            "Fridge": (1, 1),
            "Microwave": (1, 1),
            "SinkBasin": (1, 1),
            "StoveBurner": (2, 4),
            "DiningTable": (0, 1),
            "Shelf": (0, 2),
            "GarbageCan": (1, 1),
            "CoffeeMachine": (1, 1),
        },
        objects=(
            "Apple",
            "Bread",
            "ButterKnife",
            "Cup",
            "DishSponge",
            "Egg",
            "Fork",
            "Kettle",
            "Knife",
            "Ladle",
            "Lettuce",
            "Mug",
            "Pan",
            "PepperShaker",
            "Plate",
            "Pot",
            "Potato",
            "SaltShaker",
            "SoapBottle",
            "Spatula",
            "Spoon",
            "Tomato",
            "Bowl",
            "WineBottle",
        ),
        task_types=(
            "pick_and_place",
            "pick_clean_then_place",
            "pick_heat_then_place",
            "pick_cool_then_place",
            "pick_two_obj_and_place",
        ),
    ),
    "living_room": SceneSpec(
        receptacles={
            "Sofa": (1, 1),
            "CoffeeTable": (1, 1),
            "SideTable": (1, 2),
            "Shelf": (0, 3),
            "TVStand": (0, 1),
            "Drawer": (1, 4),
            "Cabinet": (0, 3),
            "ArmChair": (0, 2),
            "GarbageCan": (1, 1),
            "Dresser": (0, 1),
            "DiningTable": (0, 1),
        },
        objects=(
            "Book",
            "Box",
            "CellPhone",
            "CreditCard",
            "KeyChain",
            "Laptop",
            "Newspaper",
            "Pillow",
            "RemoteControl",
            "Statue",
            "Vase",
            "Watch",
            "Pencil",
            "Pen",
            "Bowl",
        ),
        task_types=("pick_and_place", "look_at_obj_in_light", "pick_two_obj_and_place"),
    ),
    "bedroom": SceneSpec(
        receptacles={
            "Bed": (1, 1),
            "Desk": (0, 1),
            "Dresser": (1, 1),
            "Drawer": (2, 5),
            "Shelf": (0, 4),
            "SideTable": (1, 2),
            "GarbageCan": (1, 1),
            "Safe": (0, 1),
            "ArmChair": (0, 1),
            "LaundryHamper": (0, 1),
        },
        objects=(
            "AlarmClock",
            "Book",
            "CD",
            "CellPhone",
            "CreditCard",
            "KeyChain",
            "Laptop",
            "Pen",
            "Pencil",
            "Pillow",
            "TennisRacket",
            "Mug",
            "Bowl",
            "Cloth",
            "Watch",
        ),
        task_types=("pick_and_place", "look_at_obj_in_light", "pick_two_obj_and_place"),
    ),
    "bathroom": SceneSpec(
        receptacles={
            "CounterTop": (1, 1),
            "SinkBasin": (1, 2),
            "Toilet": (1, 1),
            "Cabinet": (2, 4),
            "Drawer": (0, 3),
            "Shelf": (0, 2),
            "GarbageCan": (1, 1),
            "TowelHolder": (0, 1),
            "HandTowelHolder": (1, 1),
            "BathtubBasin": (0, 1),
            "ToiletPaperHanger": (1, 1),
        },
        objects=(
            "Candle",
            "Cloth",
            "DishSponge",
            "HandTowel",
            "SoapBar",
            "SoapBottle",
            "SprayBottle",
            "ToiletPaper",
            "Towel",
            "TissueBox",
            "Plunger",
            "ScrubBrush",
        ),
        task_types=("pick_and_place", "pick_clean_then_place", "pick_two_obj_and_place"),
    ),
}


def domain_of_scene(scene: int) -> str | None:
    for domain, (lo, hi) in SCENE_RANGES.items():
        if lo <= scene <= hi:
            return domain
    return None
