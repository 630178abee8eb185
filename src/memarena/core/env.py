"""The benchmark contract: an :class:`Env` lists tasks and opens :class:`Episode` objects.

A benchmark author subclasses both. One Env object can have many episodes open at once (the
batched runner steps ``protocol.concurrency`` of them in lockstep), so an episode owns all of
its state. Envs never import models or memory methods.

Required (abstract): ``Env.tasks``, ``Env.prompt``, ``Env.open``; ``Episode.reset``,
``Episode.step``. Everything else has a default here that a benchmark overrides only when it
needs to; the runner and the pipeline call these members directly, never probing with
``getattr``.

Construction: Hydra passes every key of ``conf/env/<name>.yaml`` (except ``_target_``) as a
keyword argument, and the pipeline checks the keys against the constructor's signature before
anything is built. So a constructor names every option it takes, and takes no ``**kwargs``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memarena.core.types import Observation, StepResult, Task

DEFAULT_MAX_TOKENS = 48  # tokens per agent reply unless the protocol or the env sets more


@dataclass
class EnvPrompt:
    """Per-benchmark prompt pieces used by the agent's prompt builder.

    ``fewshot`` holds the benchmark's fixed worked examples for the task (text), ``shown`` how
    many of them a prompt includes by default (the env's ``fewshot`` option; None = all). Every
    method's prompt shows the same ``shown`` examples (the papers give every method the same
    benchmark case); a method may ask for more (ICL shows all of them, see
    ``MemoryMethod.benchmark_examples``). Memory methods add their own slots next to them.
    """

    system: str
    action_format: str
    fewshot: list[str] = field(default_factory=list)
    shown: int | None = None
    # tool-calling envs (BFCL): the functions as OpenAI-style tool schemas, and the system
    # message and reply format used instead of ``system`` / ``action_format`` when the agent's
    # backbone takes them natively (the schemas then travel in the request, not in the text)
    tools: list[dict[str, Any]] | None = None
    tools_system: str | None = None
    tools_action_format: str | None = None
    # the prompt of the released agent loop (protocol.agent_loop gmemory_autogen /
    # memco_autogen), where the env's differs from memarena's own (FEVER's ReAct thoughts);
    # None: the same prompt
    released: EnvPrompt | None = None

    def examples(self, count: int | str | None = None) -> list[str]:
        """The examples a prompt shows: ``count`` of them (``"all"``; None = ``shown``)."""
        n = self.shown if count is None else (None if count == "all" else int(count))
        return list(self.fewshot if n is None else self.fewshot[:n])


class Episode(ABC):
    """One task being played. ``task`` is set by the constructor."""

    task: Task

    @abstractmethod
    def reset(self) -> Observation:
        """The initial observation."""

    @abstractmethod
    def step(self, action: str) -> StepResult:
        """Apply one action; a bad action is a normal step with ``valid_action=False``
        feedback, not an exception (an exception ends the episode with status ``error``)."""

    def close(self) -> None:
        """Release what the episode holds (a game, a JVM slot, cached API instances)."""
        return None

    # -- optional hooks ------------------------------------------------------------------------
    def expert_action(self) -> str | None:
        """The expert's next action in the current state, or None when it has none. The expert
        policy (``backbone=scripted``) and ICL's demonstrations use it."""
        return None

    def noise_actions(self) -> list[str]:
        """Plausible wrong actions for the expert policy's epsilon noise when the observation
        lists no admissible actions (free-text envs such as ReAct QA). None needed otherwise."""
        return []

    def parse_reply(self, text: str) -> str | None:
        """Turn a free-text model reply into the action string for :meth:`step`, for envs whose
        actions span several lines or come as tool-call blocks (BFCL). None (the default) lets
        the runner keep one line, matched to the admissible actions. Constrained choices never
        come here."""
        return None

    def details(self) -> dict | None:
        """Called as the episode ends (before :meth:`close`): extra facts kept in the episode
        record for error analysis (BFCL: the checker's verdict). A failing hook is logged."""
        return None


class Env(ABC):
    """A benchmark. ``name`` goes into task ids and result paths; ``step_budget`` is the
    default steps per episode (``protocol.step_budget`` overrides it); ``max_tokens`` the
    default agent reply length (``protocol.max_tokens`` overrides it)."""

    name: str
    step_budget: int
    max_tokens: int = DEFAULT_MAX_TOKENS
    # True when the env runs on embedded stand-in data, not the benchmark's official data
    # (runs are flagged ``stand_in_data``; the env's name says so too, e.g. ``pddl_generated``)
    stand_in: bool = False

    @abstractmethod
    def tasks(self, split: str) -> list[Task]:
        """Tasks of a split (``train`` or ``test``; envs may offer more)."""

    def domains(self) -> list[str]:
        """Source domains (MemCo: one agent per domain). Default: the domains of the tasks."""
        seen = {t.domain: None for split in ("train", "test") for t in self.tasks(split)}
        return list(seen)

    @abstractmethod
    def prompt(self, task: Task | None = None) -> EnvPrompt:
        """Prompt pieces for a task (benchmarks with several domains describe only its own)."""

    @abstractmethod
    def open(self, task: Task) -> Episode:
        """A new episode of ``task`` (not yet reset)."""

    def first_request(self, task: Task) -> str:
        """The task's first user message as the benchmark states it, without the labels
        memarena adds to its goal (BFCL: the first turn's text, without ``User: ``). A prompt
        layout that sends the benchmark's own message (``protocol.prompt_layout: reme_bfcl``)
        takes it as the task's goal. Default: the goal."""
        return task.goal

    def run_metrics(self, records: Sequence[Any]) -> dict[str, Any]:
        """The benchmark's own run-level metrics over a run's evaluation records (the latest
        record of each episode), merged into ``metrics.json`` (AppWorld: ``tgc`` / ``sgc``).
        Default: none."""
        return {}

    def close(self) -> None:
        """Release what the env holds (JVMs, subprocesses); called once when the job ends."""
        return None


def env_family(name: str) -> str:
    """The benchmark an env name belongs to, its stand-ins and datasets included:
    ``appworld_smoke`` and ``appworld`` are ``appworld``, ``pddl_generated`` is ``pddl``,
    ``fever_official`` is ``fever``. Methods settle their ``official`` readings by it."""
    return str(name).split("_", 1)[0]
