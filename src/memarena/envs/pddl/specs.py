"""Per-domain tables: domain files, sentence templates, action help and interface flags.

Everything that differs between the four PDDL domains lives here, keyed by the domain name, so
the simulator, renderer and env stay domain-agnostic. Predicate templates are keyed by
``(predicate, arity)``, use ``{0}``, ``{1}`` ... for the arguments and are listed in the order
states are described (changing facts first, fixed facts last); the goal phrasing of the
predicates that appear in AgentBoard goals (``at``, ``on``, ``contains``, ``inflated``, ``in``)
matches AgentBoard's subgoal sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

Templates = dict[tuple[str, int], str]


@dataclass(frozen=True)
class DomainSpec:
    """What the env needs to know about one domain besides its PDDL."""

    name: str
    templates: Templates
    actions_help: tuple[str, ...]
    # Names an external folder may use for this domain (AgentBoard spells it ``blockworld``).
    aliases: tuple[str, ...] = ()
    # True: every step shows the full state; False: steps show only what changed and the agent
    # uses ``look around`` to read the full state (AgentBoard's barman and tyreworld).
    full_state_each_step: bool = True
    summary: str = ""

    @property
    def has_look_around(self) -> bool:
        return not self.full_state_each_step

    def domain_pddl(self) -> str:
        """Text of the domain file written for this project."""
        path = resources.files("memarena.envs.pddl").joinpath("domains", f"{self.name}.pddl")
        return path.read_text(encoding="utf-8")


GRIPPER = DomainSpec(
    name="gripper",
    summary=(
        "A robot (Robby) with grippers moves balls between rooms. Each gripper holds one ball."
    ),
    templates={
        ("at-robby", 1): "Robby is at {0}",
        ("at", 2): "{0} is at {1}",
        ("carry", 2): "{1} is carrying {0}",
        ("free", 1): "{0} is free",
        ("room", 1): "{0} is a room",
        ("ball", 1): "{0} is a ball",
        ("gripper", 1): "{0} is a gripper",
    },
    actions_help=(
        "move <from_room> <to_room>: Robby moves from one room to another.",
        "pick <ball> <room> <gripper>: pick up a ball in Robby's room with a free gripper.",
        "drop <ball> <room> <gripper>: drop a carried ball in Robby's room.",
    ),
)

BLOCKSWORLD = DomainSpec(
    name="blocksworld",
    aliases=("blockworld",),
    summary="One arm stacks and unstacks blocks on a table.",
    templates={
        ("on", 2): "{0} is on {1}",
        ("on-table", 1): "{0} is on the table",
        ("ontable", 1): "{0} is on the table",
        ("clear", 1): "{0} is clear",
        ("holding", 1): "The arm is holding {0}",
        ("arm-empty", 0): "The arm is empty",
        ("handempty", 0): "The arm is empty",
    },
    actions_help=(
        "pickup <block>: pick up a clear block from the table (the arm must be empty).",
        "putdown <block>: put the held block on the table.",
        "stack <block> <under_block>: put the held block on a clear block.",
        "unstack <block> <under_block>: take a clear block off the block below it "
        "(the arm must be empty).",
    ),
)

BARMAN = DomainSpec(
    name="barman",
    full_state_each_step=False,
    summary=(
        "A two-handed robot bartender fills shots from dispensers and mixes cocktails in a "
        "shaker. A cocktail needs its first and second ingredient shaken together."
    ),
    templates={
        ("holding", 2): "{0} hand is holding {1}",
        ("handempty", 1): "{0} hand is empty",
        ("ontable", 1): "{0} is on the table",
        ("contains", 2): "{0} contains {1}",
        ("empty", 1): "{0} is empty",
        ("clean", 1): "{0} is clean",
        ("used", 2): "{0} is used for {1}",
        ("shaker-level", 2): "{0} is at level {1}",
        ("unshaked", 1): "{0} is unshaken",
        ("shaked", 1): "{0} is shaken",
        ("shaker-empty-level", 2): "{0} is empty at level {1}",
        ("next", 2): "{1} is the level above {0}",
        ("dispenses", 2): "{0} dispenses {1}",
        ("cocktail-part1", 2): "{0} has {1} as its first ingredient",
        ("cocktail-part2", 2): "{0} has {1} as its second ingredient",
    },
    actions_help=(
        "grasp <hand> <container>: take a shot or shaker from the table with an empty hand.",
        "leave <hand> <container>: put a held container on the table.",
        "fill-shot <shot> <ingredient> <hand> <other_hand> <dispenser>: fill a clean, empty "
        "held shot from a dispenser; the other hand must be empty.",
        "refill-shot <shot> <ingredient> <hand> <other_hand> <dispenser>: refill an empty held "
        "shot with the ingredient it was used for; the other hand must be empty.",
        "empty-shot <hand> <shot> <beverage>: pour away what a held shot contains.",
        "clean-shot <shot> <beverage> <hand> <other_hand>: clean an empty held shot; the other "
        "hand must be empty.",
        "pour-shot-to-clean-shaker <shot> <ingredient> <shaker> <hand> <level> <next_level>: "
        "pour a held shot into a clean, empty shaker.",
        "pour-shot-to-used-shaker <shot> <ingredient> <shaker> <hand> <level> <next_level>: "
        "pour a held shot into a shaker that holds unshaken ingredients.",
        "empty-shaker <hand> <shaker> <cocktail> <level> <empty_level>: pour away the "
        "cocktail in a held shaker.",
        "clean-shaker <hand> <other_hand> <shaker>: clean an empty held shaker; the other "
        "hand must be empty.",
        "shake <cocktail> <ingredient1> <ingredient2> <shaker> <hand> <other_hand>: mix a "
        "cocktail's two ingredients in a held shaker; the other hand must be empty.",
        "pour-shaker-to-shot <cocktail> <shot> <hand> <shaker> <level> <lower_level>: pour the "
        "shaken cocktail from a held shaker into a clean, empty shot.",
    ),
)

TYREWORLD = DomainSpec(
    name="tyreworld",
    full_state_each_step=False,
    summary=(
        "Replace flat wheels with the spare wheels from the boot: open the boot, fetch the "
        "tools, loosen the nuts, jack the hub up, undo the nuts, swap the wheels, do the nuts "
        "up, jack the hub down, tighten the nuts, inflate the spare and put things away."
    ),
    templates={
        ("have", 1): "You have {0}",
        ("in", 2): "{0} is in {1}",
        ("on", 2): "{0} is on {1}",
        ("free", 1): "{0} has no wheel on it",
        ("loose", 2): "{0} is loose on {1}",
        ("tight", 2): "{0} is tight on {1}",
        ("fastened", 1): "{0} is fastened",
        ("unfastened", 1): "{0} is unfastened",
        ("on-ground", 1): "{0} is on the ground",
        ("not-on-ground", 1): "{0} is jacked up",
        ("inflated", 1): "Wheel {0} is inflated",
        ("not-inflated", 1): "Wheel {0} is not inflated",
        ("intact", 1): "Wheel {0} is intact",
        ("isopen", 1): "{0} is open",
        ("closed", 1): "{0} is closed",
        ("unlocked", 1): "{0} is unlocked",
    },
    actions_help=(
        "open <container>: open an unlocked, closed container (the boot).",
        "close <container>: close an open container.",
        "fetch <object> <container>: take a tool, wheel or nut out of an open container.",
        "put-away <object> <container>: put something you have into an open container.",
        "loosen <nuts> <hub>: loosen tight nuts on a hub on the ground (needs the wrench).",
        "tighten <nuts> <hub>: tighten loose nuts on a hub on the ground (needs the wrench).",
        "jack-up <hub>: lift a hub off the ground (needs the jack; the jack stays under it).",
        "jack-down <hub>: lower a hub to the ground and get the jack back.",
        "undo <nuts> <hub>: take loose nuts off a jacked-up hub (needs the wrench).",
        "do-up <nuts> <hub>: put nuts you have onto a jacked-up hub with no nuts (needs the "
        "wrench).",
        "remove-wheel <wheel> <hub>: take the wheel off a jacked-up hub with no nuts.",
        "put-on-wheel <wheel> <hub>: put a wheel you have onto a free, jacked-up hub with no nuts.",
        "inflate <wheel>: inflate an intact, flat wheel (needs the pump).",
    ),
)

SPECS: dict[str, DomainSpec] = {s.name: s for s in (GRIPPER, BLOCKSWORLD, BARMAN, TYREWORLD)}
DOMAIN_NAMES: tuple[str, ...] = tuple(SPECS)

CHECK_VALID_ACTIONS = "check valid actions"
LOOK_AROUND = "look around"
INVALID_ACTION_MESSAGE = (
    "The action is not valid and therefore takes no effect. Please check valid actions."
)


def meta_actions(spec: DomainSpec) -> tuple[str, ...]:
    """Meta-actions available in a domain (they never change the state)."""
    return (CHECK_VALID_ACTIONS, LOOK_AROUND) if spec.has_look_around else (CHECK_VALID_ACTIONS,)
