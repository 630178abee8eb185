"""The two skill controllers of ``method=memskill`` (``method.controller``):

- ``ppo`` (MemCo's runs: ``MEMSKILL_CONTROLLER=ppo`` with a trained checkpoint):
  :class:`PPOController`, MemSkill's policy network (:mod:`.ppo`) over the state
  ``[span embedding || mean of the shown items' embeddings]`` (zeros when none is shown) and
  the skills' description embeddings, both from the run's embedder (MemSkill: its state and
  operation encoders, ``StateEncoder`` with ``state_fusion=mean``). While acquiring it samples
  and learns; frozen (evaluation, the final rebuild) it takes the K largest logits (MemCo's
  adapter: ``deterministic=True``).
- ``llm``: :func:`llm_select`, one batched memory-LLM call choosing the skills per span.

Training on the train split (MemSkill's ALFWorld trainer maps batch A -> batch B onto the task
stream): the spans a wave writes are one episode's steps; each step's shaping reward is the
process reward of :func:`.ppo.process_reward`; the episode's delayed reward is the success rate
of the next tasks the memory observes (they read the memory those steps wrote), as MemSkill's
episode reward is the success rate of the batch-B tasks run on the memory batch A built. Every
``batch_episodes`` finished episodes make one PPO update; what is left updates once when
acquisition ends (:meth:`PPOController.flush`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memarena.memory.llm_calls import record_fallback
from memarena.memory.memskill import prompts
from memarena.memory.memskill.banks import Skill
from memarena.memory.memskill.ppo import (
    PPOConfig,
    PPOTrainer,
    RolloutBuffer,
    ShapingConfig,
    Step,
    process_reward,
)

CONTROLLERS = ("ppo", "llm")


@dataclass
class Choice:
    """The skills chosen for one span, and (PPO) what the rollout keeps of the decision."""

    names: list[str]
    step: Step | None = None


def unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / (float(np.linalg.norm(v)) + 1e-8)


class PPOController:
    """MemSkill's learnt controller (module docstring); the network is built on first use,
    when the embedder's dimension is known."""

    def __init__(self, cfg: PPOConfig, shaping: ShapingConfig, seed: int = 0) -> None:
        self.cfg, self.shaping, self.seed = cfg, shaping, int(seed)
        self.trainer: PPOTrainer | None = None
        self.buffer = RolloutBuffer()
        self.episodes = 0  # episodes closed with a reward
        self.dropped = 0  # steps whose episode never got a reward
        self._op_vectors: dict[str, np.ndarray] = {}

    # -- features
    @staticmethod
    def state(span: np.ndarray, shown: list[np.ndarray]) -> np.ndarray:
        """``[span || mean(shown)]`` of unit vectors; zeros for the memory half when nothing
        is shown."""
        span = unit(span)
        memory = np.mean([unit(v) for v in shown], axis=0) if shown else np.zeros_like(span)
        return np.concatenate([span, memory.astype(np.float32)]).astype(np.float32)

    def skill_matrix(
        self, skills: list[Skill], embed: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """The skills' description embeddings (unit rows), each text embedded once."""
        missing = [s.description for s in skills if s.description not in self._op_vectors]
        if missing:
            for text, vector in zip(missing, embed(missing), strict=True):
                self._op_vectors[text] = unit(vector)
        return np.stack([self._op_vectors[s.description] for s in skills]).astype(np.float32)

    def _trainer(self, state_dim: int, op_dim: int) -> PPOTrainer:
        if self.trainer is None:
            self.trainer = PPOTrainer(state_dim, op_dim, self.cfg, self.seed)
        return self.trainer

    # -- acting
    def select(
        self, states: list[np.ndarray], ops: np.ndarray, skills: list[Skill], learn: bool
    ) -> list[Choice]:
        trainer = self._trainer(states[0].shape[0], ops.shape[1])
        out = []
        for state in states:
            action, log_prob, value = trainer.act(state, ops, sample=learn)
            step = Step(state, ops, action, log_prob, value) if learn else None
            out.append(Choice([skills[i].name for i in action], step))
        return out

    # -- learning
    def record(self, choices: list[Choice], results: list[list[tuple[str, bool]]],
               ops_of: dict[str, str]) -> None:  # fmt: skip
        """Push a wave's steps with their process rewards (``ops_of``: skill -> operation)."""
        steps = [c for c in choices if c.step is not None]
        for choice, done in zip(choices, results, strict=True):
            if choice.step is None:
                continue
            selected = {ops_of[n] for n in choice.names}
            choice.step.reward = process_reward(selected, done, len(steps), self.shaping)
            self.buffer.push(choice.step)

    def close_episode(self, reward: float) -> dict[str, float]:
        """The delayed reward of the open episode; a PPO update when ``batch_episodes``
        episodes are finished (its loss parts, else {})."""
        if self.buffer.finish_episode(float(reward), self.shaping):
            self.episodes += 1
        if self.buffer.episodes >= max(1, int(self.cfg.batch_episodes)):
            return self._update()
        return {}

    def flush(self) -> dict[str, float]:
        """End of acquisition: the open episode (no reward will come) is dropped, the finished
        ones left make one last update."""
        self.dropped += self.buffer.drop_open()
        return self._update() if self.buffer.episodes else {}

    def _update(self) -> dict[str, float]:
        steps = self.buffer.take_finished()
        return self.trainer.update(steps) if self.trainer is not None and steps else {}

    # -- snapshot
    def to_state(self) -> dict[str, Any]:
        """The checkpoint (JSON values) and the training counters; the rollout buffer is not
        kept (a resumed acquisition replays it)."""
        return {
            "checkpoint": self.trainer.to_state() if self.trainer is not None else None,
            "episodes": self.episodes,
            "dropped_steps": self.dropped,
        }

    def load_state(self, state: dict[str, Any] | None) -> None:
        state = state or {}
        checkpoint = state.get("checkpoint")
        self.trainer = PPOTrainer.from_state(checkpoint) if checkpoint else None
        self.episodes = int(state.get("episodes", 0))
        self.dropped = int(state.get("dropped_steps", 0))
        self.buffer = RolloutBuffer()


def llm_select(
    memory: Any, goals: list[str], spans: list[str], listings: list[str]
) -> list[Choice]:
    """The LLM controller: per span one request in a batched call choosing at most
    ``skills_per_span`` skills; an unusable answer is a counted fallback to the bank's first
    ones."""
    bank = memory.skills.skills
    names = list(bank)
    catalogue = "\n".join(s.render() for s in bank.values())
    n = min(memory.skills_per_span, len(names))
    requests = [
        memory.request(
            "controller",
            prompts.CONTROLLER_SYSTEM.format(n=n),
            prompts.CONTROLLER_USER.format(goal=g, span=s, memories=m, skills=catalogue),
            prompts.controller_schema(names, n),
        )
        for g, s, m in zip(goals, spans, listings, strict=True)
    ]
    out = []
    for answer in memory.ask("controller", requests):
        raw = answer.get("skills") if isinstance(answer, dict) else None
        picked = [p for p in raw if p in bank] if isinstance(raw, list) else []
        if not picked:
            if answer is not None:
                record_fallback(memory.services.llm, "memskill_controller_skills", memory.fallbacks)
            picked = names[:n]
        out.append(Choice(list(dict.fromkeys(picked))[:n]))
    return out
