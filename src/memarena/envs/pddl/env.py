"""``PDDLEnv``: AgentBoard-style PDDL benchmark (gripper, blocksworld, barman, tyreworld).

Train and test problems are generated from this project's domain files with a seed; with
``problems_dir`` set, the test split is an external AgentBoard-format folder instead (see
:mod:`memarena.envs.pddl.agentboard`), and the train split is generated (``train_source:
generated``, disjoint from the test problems) or the same folder's problems (``train_source:
problems``: MemCo's source lists are AgentBoard's 60 test ids). Runs on generated test problems
are named ``pddl_generated`` (conf/env/pddl.yaml), never ``pddl``. A task's payload holds the
problem text (and the domain text for external problems), so any process can rebuild the
episode from the task alone. The prompt shows one worked example per domain, played by the
expert on a small generated problem (``fewshot``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.examples import play_expert, render_example
from memarena.envs.options import check_official_data, check_step_budget, choose_names, plain
from memarena.envs.pddl.agentboard import load_folder
from memarena.envs.pddl.episode import PDDLEpisode
from memarena.envs.pddl.generators import (
    DEFAULT_SIZES,
    canonical_key,
    generate_split,
    generate_splits,
    resolve_sizes,
)
from memarena.envs.pddl.planner import DEFAULT_NODE_LIMITS, DEFAULT_STRATEGIES, PlannerConfig
from memarena.envs.pddl.render import goal_text
from memarena.envs.pddl.simulator import load_problem
from memarena.envs.pddl.specs import (
    CHECK_VALID_ACTIONS,
    DOMAIN_NAMES,
    INVALID_ACTION_MESSAGE,
    LOOK_AROUND,
    SPECS,
)

log = logging.getLogger(__name__)

SPLITS = ("train", "test")
TRAIN_SOURCES = ("generated", "problems")
# hFF plateaus on barman; its goal agenda with hAdd is fast and close to optimal.
DEFAULT_DOMAIN_STRATEGIES = {"barman": ("agenda_add",)}


def _per_domain_count(key: str, value: Any, domains: Sequence[str]) -> dict[str, int]:
    value = plain(value)
    counts = value if isinstance(value, Mapping) else {d: value for d in domains}
    out = {}
    for d in domains:
        n = counts.get(d, 0)
        if not isinstance(n, int) or n < 0:
            raise ConfigError(
                f"memarena: env.{key} must be a count >= 0 or a mapping domain -> count "
                f"(got {value!r} for {d}), e.g. env.{key}=20."
            )
        out[d] = n
    return out


def _planner_configs(planner: Any, domains: Sequence[str]) -> dict[str, PlannerConfig]:
    cfg = dict(plain(planner) or {})
    valid = ("strategies", "node_limits", "weight", "repair_limit", "domain_strategies")
    unknown = set(cfg) - set(valid)
    if unknown:
        raise ConfigError(
            f"memarena: env.planner.{sorted(unknown)[0]} is not a planner option; valid: "
            f"{', '.join(valid)}."
        )
    strategies = cfg.get("strategies") or DEFAULT_STRATEGIES
    overrides = cfg.get("domain_strategies") or {}
    bad = [d for d in overrides if d not in SPECS]
    if bad:
        raise ConfigError(
            f"memarena: env.planner.domain_strategies.{bad[0]} is not a domain; valid: "
            f"{list(DOMAIN_NAMES)}."
        )
    per_domain = {**DEFAULT_DOMAIN_STRATEGIES, **overrides}
    limits = cfg.get("node_limits") or DEFAULT_NODE_LIMITS
    try:
        return {
            d: PlannerConfig.build(
                per_domain.get(d, strategies),
                limits,
                cfg.get("weight", 2.0),
                cfg.get("repair_limit", 2000),
            )
            for d in domains
        }
    except ValueError as exc:
        raise ConfigError(f"memarena: env.planner: {exc}.") from None


class PDDLEnv(Env):
    """The PDDL benchmark behind the :class:`~memarena.core.env.Env` contract.

    Args:
        name: env name written into task ids and results (``pddl``).
        step_budget: steps per episode; the runner enforces it.
        domains: subset of gripper, blocksworld, barman, tyreworld (one agent per domain in
            MemCo).
        n_train, n_test: generated problems per domain (an int, or a mapping domain -> int).
        seed: generator seed; the same seed gives the same problems in every process.
        sizes: per-domain size ranges overriding the defaults, e.g.
            ``{"gripper": {"balls": [4, 10], "rooms": [2, 3]}}``.
        problems_dir: AgentBoard-format folder whose problems replace the generated test split.
        problem_order: order of the folder's problems: ``natural`` (problem2 before problem10)
            or ``lexicographic`` (AgentBoard's own task indices, used by MemCo's task lists).
        train_source: ``generated`` (disjoint from the test problems) or ``problems`` (the
            train split is ``problems_dir``'s problems too: MemCo's PDDL source lists are the
            60 AgentBoard test ids).
        fewshot: worked examples shown in the prompt (one per domain exists; 0: none).
        require_data: stop unless ``problems_dir`` is set (paper experiments set it).
        planner: expert settings: ``strategies``, ``node_limits``, ``weight``,
            ``repair_limit``, ``domain_strategies`` (see :mod:`memarena.envs.pddl.planner`).
    """

    def __init__(
        self,
        name: str = "pddl",
        step_budget: int = 30,
        domains: Sequence[str] = DOMAIN_NAMES,
        n_train: int | Mapping[str, int] = 40,
        n_test: int | Mapping[str, int] = 20,
        seed: int = 0,
        sizes: Mapping[str, Mapping[str, Any]] | None = None,
        problems_dir: str | None = None,
        problem_order: str = "lexicographic",
        planner: Mapping[str, Any] | None = None,
        train_source: str = "generated",
        fewshot: int | None = 1,
        require_data: bool = False,
    ) -> None:
        self.name = str(name)
        self.stand_in = check_official_data(
            bool(require_data), problems_dir not in (None, ""), "pddl",
            "set env.problems_dir to AgentBoard's PDDL folder (<dir>/<domain>.pddl and "
            "<dir>/<domain>/*.pddl)", "pddl_generated",
        )  # fmt: skip
        if train_source not in TRAIN_SOURCES:
            raise ConfigError(
                f"memarena: env.train_source={train_source!r}; valid: {list(TRAIN_SOURCES)}."
            )
        if train_source == "problems" and problems_dir in (None, ""):
            raise ConfigError(
                "memarena: env.train_source=problems trains on env.problems_dir's problems; set "
                "env.problems_dir, or use env.train_source=generated."
            )
        self.train_source = train_source
        self.fewshot = None if fewshot is None else int(fewshot)
        step_budget = check_step_budget(step_budget)
        self.step_budget = step_budget
        self._domains = choose_names(
            "domains", domains, DOMAIN_NAMES, " (AgentBoard's 'blockworld' is 'blocksworld' here)"
        )
        self._n = {
            "train": _per_domain_count("n_train", n_train, self._domains),
            "test": _per_domain_count("n_test", n_test, self._domains),
        }
        self.seed = int(seed)
        self._sizes = self._check_sizes(plain(sizes) or {})
        self._planner = _planner_configs(planner, self._domains)
        self.problems_dir = None if problems_dir in (None, "") else str(problems_dir)
        self._external = (
            load_folder(self.problems_dir, self._domains, str(problem_order))
            if self.problems_dir
            else {}
        )
        self._tasks: dict[str, list[Task]] | None = None

    def _check_sizes(self, sizes: Mapping[str, Any]) -> dict[str, dict[str, tuple[int, int]]]:
        bad = [d for d in sizes if d not in SPECS]
        if bad:
            raise ConfigError(
                f"memarena: env.sizes.{bad[0]} is not a domain; valid: {list(DOMAIN_NAMES)}."
            )
        return {d: resolve_sizes(d, sizes.get(d)) for d in self._domains}

    # -- Env protocol ------------------------------------------------------------------------
    def domains(self) -> list[str]:
        return list(self._domains)

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env=pddl has no split {split!r}; valid splits: {list(SPLITS)} "
                "(protocol.train_split / protocol.eval_split)."
            )
        if self._tasks is None:
            self._tasks = self._build_tasks()
        return list(self._tasks[split])

    def _build_tasks(self) -> dict[str, list[Task]]:
        tasks: dict[str, list[Task]] = {s: [] for s in SPLITS}
        for d in self._domains:
            spec = SPECS[d]
            external = self._external.get(d, [])
            exclude = frozenset(
                canonical_key(p.initial_state, p.goals)
                for p in (load_problem(e.domain_pddl, e.problem_pddl) for e in external)
            )
            n_test = 0 if external else self._n["test"][d]
            n_train = 0 if external and self.train_source == "problems" else self._n["train"][d]
            splits = generate_splits(d, n_train, n_test, self.seed, self._sizes[d], exclude)
            for split in SPLITS:
                for i, g in enumerate(splits[split]):
                    payload = {
                        "domain": d,
                        "problem_pddl": g.pddl,
                        "source": "generated",
                        "size": g.size,
                    }
                    tasks[split].append(self._task(d, split, i, goal_text(g.goal, spec), payload))
            for i, e in enumerate(external):
                goals = load_problem(e.domain_pddl, e.problem_pddl).goals
                payload = {
                    "domain": d,
                    "problem_pddl": e.problem_pddl,
                    "domain_pddl": e.domain_pddl,
                    "source": e.source,
                }
                for split in ("test", "train") if self.train_source == "problems" else ("test",):
                    tasks[split].append(self._task(d, split, i, goal_text(goals, spec), payload))
        log.info(
            "pddl tasks: %s", {s: len(ts) for s, ts in tasks.items()} | {"domains": self._domains}
        )
        return tasks

    def _task(self, domain: str, split: str, i: int, goal: str, payload: dict) -> Task:
        return Task(
            f"{self.name}/{domain}/{split}/{i:03d}", self.name, split, domain, goal, payload
        )

    def open(self, task: Task) -> PDDLEpisode:
        """An episode for ``task``, rebuilt from its payload alone (any process can do this)."""
        payload = task.payload
        domain = payload["domain"]
        if domain not in SPECS:
            raise ConfigError(f"memarena: task {task.id} has unknown PDDL domain {domain!r}.")
        spec = SPECS[domain]
        domain_pddl = payload.get("domain_pddl") or spec.domain_pddl()
        problem = load_problem(domain_pddl, payload["problem_pddl"])
        planner = self._planner.get(domain) or _planner_configs(None, [domain])[domain]
        return PDDLEpisode(task, problem, spec, planner)

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        """Instructions for the task's domain (all configured domains when no task is given)."""
        domains = (task.domain,) if task is not None else tuple(self._domains)
        return EnvPrompt(
            system=self._system_prompt(domains),
            action_format=ACTION_FORMAT,
            fewshot=[domain_example(d) for d in domains],
            shown=self.fewshot,
        )

    @functools.lru_cache(maxsize=16)  # noqa: B019 - a handful of domain tuples per env
    def _system_prompt(self, domains: tuple[str, ...]) -> str:
        lines = [SYSTEM_INTRO, ""]
        for d in domains:
            spec = SPECS[d]
            lines.append(f"Domain {d}: {spec.summary}")
            lines.append("Actions:")
            lines += [f"- {h}" for h in spec.actions_help]
            metas = f"'{CHECK_VALID_ACTIONS}'" + (
                f", '{LOOK_AROUND}'" if spec.has_look_around else ""
            )
            lines.append(f"Meta-actions: {metas}.")
            lines.append("")
        return "\n".join(lines).rstrip()

    def close(self) -> None:
        """Nothing to release."""


@functools.cache
def domain_example(domain: str) -> str:
    """The domain's worked example: the expert on the smallest problem the domain's generator
    makes from its own ``example`` stream (never a train or test problem's stream)."""
    spec = SPECS[domain]
    smallest = {knob: (low, low) for knob, (low, _) in DEFAULT_SIZES[domain].items()}
    (problem,) = generate_split(domain, "example", 1, 0, smallest)
    grounded = load_problem(spec.domain_pddl(), problem.pddl)
    goal = goal_text(grounded.goals, spec)
    task = Task(f"example/{domain}", "pddl", "example", domain, goal, {"domain": domain})
    initial, turns = play_expert(PDDLEpisode(task, grounded, spec), max_steps=40)
    return render_example(goal, initial, turns)


SYSTEM_INTRO = (
    "You solve planning problems in small text worlds. Each observation describes the world "
    "as a list of facts, and the goal lists the facts that must all hold at the end. At each "
    "turn you take one action, written as the action's name followed by its arguments in the "
    "order shown below, separated by spaces (for example: pick ball1 rooma left). An action "
    "whose conditions do not hold has no effect and you are told: "
    f'"{INVALID_ACTION_MESSAGE}" '
    f"Two meta-actions never change the world: '{CHECK_VALID_ACTIONS}' lists the actions you "
    f"can take right now, and '{LOOK_AROUND}' (in domains that report only what each action "
    "changed) describes the whole current state. The episode ends as soon as every goal fact "
    "holds; you have a limited number of steps."
)
ACTION_FORMAT = (
    "Reply with exactly one action and nothing else: the action name followed by its "
    "arguments separated by spaces (e.g. 'pick ball1 rooma left'), or a meta-action such as "
    f"'{CHECK_VALID_ACTIONS}'."
)
