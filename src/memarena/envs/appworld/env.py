"""``AppWorldEnv``: AppWorld (Trivedi et al., 2024) behind the Env protocol, played through the
package's own environment server in a separate virtual environment.

The ``appworld`` package pins pydantic<2, so it lives in its own venv (``env.python``, made by
``scripts/setup_appworld.sh``); memarena starts ``appworld serve environment`` processes there
(:mod:`~memarena.envs.appworld.server`, one world per process, ``env.n_servers`` / ``env.ports``
for parallel episodes) and talks HTTP to them (:mod:`~memarena.envs.appworld.client`).

Data: ``env.root`` is an AppWorld root holding ``data/`` (the official download, ``appworld
download data``). With ``env.root`` null and ``env.require_data`` false, a small offline root
is built with the package's own tooling (:mod:`~memarena.envs.appworld.smoke_root`) into
``env.cache_dir``: six questions about the supervisor, a pipeline check whose results go under
``appworld_smoke``, never beside the paper's numbers.

Splits: ``train`` and ``test`` are AppWorld datasets chosen by ``env.splits`` (ReMe: train (90)
for acquisition, test_normal (168) for evaluation); AppWorld's own names (train, dev,
test_normal, test_challenge) are accepted too. Domain: ``appworld`` (one source domain); the
scenario of each task is in its payload and in the episode details (for SGC,
:func:`~memarena.envs.appworld.metrics.goal_completion`).

Task and prompt as ReMe's AppWorld agent has them: ``Task.goal`` (what memory methods retrieve
and learn by, and what the agent reads as its task) is AppWorld's instruction alone, as ReMe's
agent queries its memory with ``world.task.instruction``; the supervisor (name, email, phone;
also in the payload) is filled into the per-task system prompt with the app descriptions
(:mod:`~memarena.envs.appworld.prompts`, ``env.prompt_style``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.appworld import data
from memarena.envs.appworld.episode import AppWorldEpisode
from memarena.envs.appworld.metrics import goal_completion
from memarena.envs.appworld.prompts import (
    ACTION_FORMAT,
    PROMPT_STYLES,
    SHORT_ACTION_FORMAT,
    SHORT_FEWSHOT,
    SUPERVISOR_FIELDS,
    system_for,
)
from memarena.envs.appworld.server import LAUNCHERS, ServerPool, venv_python
from memarena.envs.options import check_official_data, check_step_budget, plain

MAX_TOKENS = 1024  # a reply is a program with comments
DOMAIN = "appworld"


class AppWorldEnv(Env):
    """AppWorld behind the :class:`~memarena.core.env.Env` contract.

    Args:
        name: env name in task ids and results (``appworld``; ``appworld_smoke`` on the
            offline smoke root).
        step_budget: interactions per task (ReMe: 30), also AppWorld's ``max_interactions``.
        python: the AppWorld venv's python (relative paths: from the working directory).
        root: the AppWorld root holding ``data/``; null for the smoke root (see the module
            docstring).
        require_data: stop unless ``root`` is set (paper experiments).
        cache_dir: where the smoke root is built.
        splits: ``{train: <AppWorld dataset>, test: <AppWorld dataset>}``.
        n_servers: servers at most (one per episode open at once); null = as many as needed.
        ports: fixed loopback ports, one server each (overrides n_servers); null = free ports.
        launcher: ``loopback`` (the package's server app bound to 127.0.0.1) or ``cli``
            (``appworld serve environment``, which binds all interfaces).
        startup_timeout: seconds a server may take to answer after starting.
        request_timeout: seconds one request may take (AppWorld's own code timeout is 100 s).
        experiment_name: AppWorld's experiment name (its outputs go to
            ``<root>/experiments/outputs/<name>_s<server>``).
        fewshot: the worked example (0 or 1): ``official_structure`` keeps it in the system
            prompt between the api_docs calls and the rules; ``short`` shows it before the task.
        prompt_style: ``official_structure`` (memarena's wording of ReMe's AppWorld prompt, its
            content and order) or ``short`` (memarena's earlier condensed prompt).
    """

    def __init__(
        self,
        name: str = "appworld",
        step_budget: int = 30,
        python: str = ".venv-appworld/bin/python",
        root: str | None = None,
        require_data: bool = False,
        cache_dir: str = ".cache/appworld",
        splits: Mapping[str, str] | None = None,
        n_servers: int | None = None,
        ports: list[int] | None = None,
        launcher: str = "loopback",
        startup_timeout: float = 120.0,
        request_timeout: float = 300.0,
        experiment_name: str = "memarena",
        fewshot: int = 1,
        prompt_style: str = "official_structure",
        resources: Mapping[str, int] | None = None,
    ) -> None:
        # what one job on this env takes from a cluster (memarena.launch.resources), not used here
        self.resources = dict(resources or {})
        self.name = str(name)
        self.step_budget = check_step_budget(step_budget)
        self.max_tokens = MAX_TOKENS
        self.python = venv_python(python)
        self.root = None if root in (None, "", "null") else str(Path(str(root)).expanduser())
        if not isinstance(require_data, bool):
            raise ConfigError(f"memarena: env.require_data={require_data!r} must be true or false.")
        self.stand_in = check_official_data(
            require_data, self.root is not None, "appworld",
            "set env.root (or APPWORLD_ROOT) to an AppWorld root holding data/ "
            "(`appworld download data`)", "appworld_smoke",
        )  # fmt: skip
        self.cache_dir = str(cache_dir)
        self.splits = dict(plain(splits) or {"train": "train", "test": "test_normal"})
        for part, dataset in self.splits.items():
            if dataset not in data.SPLITS:
                raise ConfigError(
                    f"memarena: env.splits.{part}={dataset!r}; AppWorld's splits: "
                    f"{list(data.SPLITS)}."
                )
        if launcher not in LAUNCHERS:
            raise ConfigError(f"memarena: env.launcher={launcher!r}; valid: {list(LAUNCHERS)}.")
        ports = plain(ports)
        if n_servers is not None and (not isinstance(n_servers, int) or n_servers < 1):
            raise ConfigError(f"memarena: env.n_servers={n_servers!r} must be an int >= 1 or null.")
        self.n_servers, self.ports, self.launcher = n_servers, list(ports or []), launcher
        self.startup_timeout, self.request_timeout = float(startup_timeout), float(request_timeout)
        self.experiment_name = str(experiment_name)
        if fewshot not in (0, 1):
            raise ConfigError(f"memarena: env.fewshot={fewshot!r} must be 0 or 1.")
        self.fewshot = fewshot
        if prompt_style not in PROMPT_STYLES:
            raise ConfigError(
                f"memarena: env.prompt_style={prompt_style!r}; valid: {list(PROMPT_STYLES)}."
            )
        self.prompt_style = prompt_style
        self._apps: dict[str, str] | None = None
        self._root: str | None = None
        self._pool: ServerPool | None = None
        self._tasks: dict[str, list[Task]] = {}

    # -- data ----------------------------------------------------------------------------------
    def data_root(self) -> str:
        """The root in use, checked (the venv and the data; the smoke root built on first use)."""
        if self._root is None:
            data.check_setup(self.python, self.root)
            if self.root is None:
                smoke = str(Path(self.cache_dir) / "smoke_root")
                data.build_smoke_root(self.python, smoke)
                data.check_setup(self.python, smoke, what="the smoke root")
                self._root = smoke
            else:
                self._root = self.root
        return self._root

    def tasks(self, split: str) -> list[Task]:
        dataset = self.splits.get(split, split)
        if dataset not in data.SPLITS:
            raise ConfigError(
                f"memarena: env=appworld has no split {split!r}; valid: {list(self.splits)} "
                f"(env.splits) or AppWorld's {list(data.SPLITS)}."
            )
        if split not in self._tasks:
            root = self.data_root()
            self._tasks[split] = [
                self._task(split, dataset, tid, data.task_specs(root, tid))
                for tid in data.task_ids(root, dataset)
            ]
        return list(self._tasks[split])

    def _task(self, split: str, dataset: str, task_id: str, specs: dict[str, Any]) -> Task:
        instruction = specs.get("instruction") or f"(AppWorld task {task_id})"
        supervisor = specs.get("supervisor") or {}
        payload = {
            "task_id": task_id,
            "dataset": dataset,
            "scenario": data.scenario_of(task_id),
            "instruction": instruction,
            "supervisor": {k: supervisor[k] for k in SUPERVISOR_FIELDS if k in supervisor},
        }
        # the goal is the instruction alone, the text ReMe's agent retrieves by; the supervisor
        # goes into the system prompt (prompt())
        goal = instruction
        return Task(f"{self.name}/{split}/{task_id}", self.name, split, DOMAIN, goal, payload)

    def domains(self) -> list[str]:
        return [DOMAIN]

    # -- episodes ------------------------------------------------------------------------------
    def apps(self) -> dict[str, str]:
        """AppWorld's app descriptions (every task allows every app but admin), read once."""
        if self._apps is None:
            self._apps = data.app_descriptions(self.python) if Path(self.python).is_file() else {}
        return self._apps

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        """The system prompt filled for ``task``'s supervisor (ReMe's agent renders its
        template per task); ``official_structure`` carries its worked example in the system
        prompt, ``short`` shows one before the task."""
        supervisor = (task.payload.get("supervisor") if task is not None else None) or {}
        system = system_for(self.apps(), supervisor, style=self.prompt_style,
                            fewshot=self.fewshot)  # fmt: skip
        if self.prompt_style == "short":
            return EnvPrompt(system, SHORT_ACTION_FORMAT, [SHORT_FEWSHOT], shown=self.fewshot)
        return EnvPrompt(system, ACTION_FORMAT, [], shown=0)

    def pool(self) -> ServerPool:
        if self._pool is None:
            root = self.data_root()
            self._pool = ServerPool(
                self.python, root, n_servers=self.n_servers, ports=self.ports,
                launcher=self.launcher, startup_timeout=self.startup_timeout,
                request_timeout=self.request_timeout, log_dir=str(Path(self.cache_dir) / "logs"),
            )  # fmt: skip
        return self._pool

    def open(self, task: Task) -> AppWorldEpisode:
        if "task_id" not in task.payload:
            raise ConfigError(f"memarena: task {task.id} is not an AppWorld task.")
        task_id = task.payload["task_id"]
        return AppWorldEpisode(
            task,
            self.pool(),
            step_budget=self.step_budget,
            experiment_name=self.experiment_name,
            max_interactions=self.step_budget,
            expert_code=data.solution_code(self.data_root(), task_id),
        )

    def run_metrics(self, records: Sequence[Any]) -> dict[str, Any]:
        """AppWorld's Task and Scenario Goal Completion over the run (``tgc``, ``sgc``, with
        ``n_scenarios``; averaged over runs and repetitions)."""
        out = goal_completion(records)
        return {"tgc": out["tgc"], "sgc": out["sgc"], "n_scenarios": out["n_scenarios"]}

    def close(self) -> None:
        """Stop every AppWorld server this env started."""
        if self._pool is not None:
            self._pool.close()
