"""Seeded generation of recall's task families and tasks (nothing is downloaded).

A *family* is one device (``the cobalt vault``) with a secret code: a sequence of
``code_length`` actions drawn without repetition from its domain's action vocabulary by a
generator seeded with ``(seed, domain, family index)``. A task plays one family: training tasks
show the code on a note beside the device, test tasks do not, and say the goal in other words
in another place (the surface form changes, the procedure does not). The admissible actions at
each stage are the right one and ``options - 1`` distractors, in an order drawn per task and
stage.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Domains: a kind of device and the actions that operate it (its vocabulary). Actions and
# stages are words, never digits: MemCo's role abstraction (and ALFWorld's conventions) read
# ``word <digits>`` as an instance id and drop it, which turned "press 5" into "press".
DOMAINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "vault": ("vault", tuple(f"press the {k} key" for k in (
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma",
        "omega", "anchor", "bell", "crown", "drum", "eagle", "feather", "globe", "harp", "iris",
        "kite", "lotus", "moon", "needle",
    ))),
    "terminal": ("terminal", tuple(f"type {w}" for w in (
        "nova", "orbit", "maple", "quartz", "falcon", "ember", "harbor", "lumen", "nectar",
        "pixel", "sable", "tundra", "willow", "zephyr", "canyon", "meadow", "glacier", "cobble",
        "thistle", "velvet", "marble", "lantern", "spruce", "pepper",
    ))),
    "shrine": ("shrine", tuple(f"light the {c} candle" for c in (
        "red", "blue", "green", "white", "black", "gold", "silver", "violet", "orange", "grey",
        "pink", "brown", "cyan", "lime", "navy", "beige", "maroon", "peach", "tan", "mint",
        "ruby", "amber", "ivory", "lemon",
    ))),
}  # fmt: skip
DOMAIN_NAMES = tuple(DOMAINS)
# Names that tell families apart (each used once per seed, across every domain).
ADJECTIVES = (
    "cobalt", "amber", "ivory", "crimson", "jade", "onyx", "copper", "scarlet", "saffron",
    "teal", "ochre", "pearl", "slate", "cedar", "indigo", "coral", "bronze", "azure", "russet",
    "ebony", "olive", "topaz", "garnet", "lilac", "umber", "sepia", "cerise", "mauve",
    "khaki", "plum", "rust", "sand",
)  # fmt: skip
# Places: training tasks use the first list, test tasks the second (new surface forms).
TRAIN_PLACES = ("north hall", "cellar", "library", "workshop", "attic", "courtyard")
TEST_PLACES = ("east wing", "boathouse", "observatory", "greenhouse", "chapel", "armory")
# Goal wordings: training tasks use the first list, test tasks the paraphrases of the second.
TRAIN_GOALS = ("Open {device}.", "Get {device} open.")
TEST_GOALS = (
    "Unlock {device} in the {place}.",
    "Your job: make {device} in the {place} open up.",
)
DISTRACTORS = ("random", "code")


@dataclass(frozen=True)
class Family:
    domain: str
    index: int
    device: str  # "the cobalt vault"
    code: tuple[str, ...]


def families(
    domains: tuple[str, ...], per_domain: int, code_length: tuple[int, int], seed: int
) -> list[Family]:
    """``per_domain`` families per domain; names drawn once per seed, codes per family."""
    names = list(ADJECTIVES)
    random.Random(f"recall-names-{seed}").shuffle(names)
    out: list[Family] = []
    for d in domains:
        kind, vocab = DOMAINS[d]
        for i in range(per_domain):
            rng = random.Random(f"recall-code-{seed}-{d}-{i}")
            length = rng.randint(*code_length)
            code = tuple(rng.sample(vocab, length))
            out.append(Family(d, i, f"the {names[len(out)]} {kind}", code))
    return out


def stage_options(
    family: Family, stage: int, options: int, distractors: str, others: list[Family],
    salt: str,
) -> list[str]:  # fmt: skip
    """The admissible actions at ``stage`` (0-based): the right one and ``options - 1``
    distractors, shuffled by ``salt`` (the task id).

    ``random``: distractors never occur in any code of the domain, so a memory of any device of
    the domain already singles out the right action (the easy level: it checks that memory
    reaches the prompt at all). ``code``: distractors are first the family's other stages, then
    the domain's other devices' actions, so only the right device's right stage helps (the hard
    level: it checks that retrieval finds the right episode and the model reads it in order)."""
    right = family.code[stage]
    rng = random.Random(f"recall-options-{salt}-{stage}")
    in_codes = [a for f in others if f.domain == family.domain for a in f.code]
    if distractors == "code":
        near = [a for a in family.code if a != right]
        far = [a for f in others if f.domain == family.domain and f != family for a in f.code]
        rng.shuffle(near)
        rng.shuffle(far)
        pool = list(dict.fromkeys(a for a in near + far if a != right))
        rest = [a for a in DOMAINS[family.domain][1] if a != right and a not in pool]
    else:
        pool, rest = [], [a for a in DOMAINS[family.domain][1] if a not in in_codes]
    rng.shuffle(rest)
    chosen = (pool + rest)[: options - 1] + [right]
    if len(chosen) < options:
        raise ValueError(f"recall: {family.domain} has too few actions for {options} options")
    rng.shuffle(chosen)
    return chosen


def goal_and_place(family: Family, split: str, i: int, seed: int) -> tuple[str, str]:
    """The goal text and the place of task ``i`` of ``split`` for ``family``."""
    rng = random.Random(f"recall-surface-{seed}-{family.domain}-{family.index}-{split}-{i}")
    places, goals = (TRAIN_PLACES, TRAIN_GOALS) if split == "train" else (TEST_PLACES, TEST_GOALS)
    place = rng.choice(places)
    return rng.choice(goals).format(device=family.device, place=place), place


NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number(n: int) -> str:
    """``n`` in words (stages and code lengths are words, see DOMAINS)."""
    return NUMBERS[n - 1] if 1 <= n <= len(NUMBERS) else str(n)
