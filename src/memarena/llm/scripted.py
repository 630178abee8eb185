"""The scripted backbone: the env's expert with epsilon noise. Not an LLM.

It answers agent requests only: each must carry ``choices`` and ``meta["expert_action"]`` (the
expert's next action, or None) and ``meta["episode_key"]`` (e.g. ``f"{run}:{task_id}:{step}"``).
With probability ``epsilon``, or when the expert has no action, it picks a choice uniformly at
random; otherwise the expert action (typed as free text when it is not among the choices).
Free-text envs (ReAct QA) have no choices: the runner passes the episode's plausible wrong
actions as ``meta["alternatives"]``, and the noise draws from those.
The random draw comes from a generator seeded by a stable hash of (seed, episode_key), so the
answer does not depend on batch order, batch composition or concurrency. It uses no tokens.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest, Completion
from memarena.llm.base import BackboneBase


class ScriptedBackbone(BackboneBase):
    is_llm = False

    def __init__(
        self,
        epsilon: float = 0.1,
        seed: int = 0,
        name: str | None = None,
        cache_path: str | Path | None = None,
    ) -> None:
        if not 0.0 <= float(epsilon) <= 1.0:
            raise ConfigError(
                f"memarena: backbone.epsilon={epsilon} must lie in [0, 1] (the probability of a "
                "uniformly random action instead of the expert's)."
            )
        name = name or f"scripted-expert-eps{float(epsilon):.2f}"
        if not name.startswith("scripted"):
            raise ConfigError(
                f"memarena: backbone.name={name} must start with 'scripted' so results never pass "
                "the scripted expert off as an LLM."
            )
        self.epsilon = float(epsilon)
        self.seed = int(seed)
        super().__init__(
            name=name,
            cache_model=f"scripted:eps={self.epsilon}:seed={self.seed}",
            cache_path=cache_path,
        )

    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return [self._act(r) for r in requests]

    def _act(self, request: ChatRequest) -> Completion:
        choices = request.choices or request.meta.get("alternatives")
        if not choices or "expert_action" not in request.meta:
            kind = "a JSON-schema request" if request.json_schema else "a free-text request"
            raise ConfigError(
                f"memarena: backbone {self.name} is the env's scripted expert, not an LLM: it "
                "only acts as the agent, on requests with `choices` (or, for free-text envs, "
                "meta['alternatives']) and "
                f"meta['expert_action']. It received {kind}, most likely a memory method's own "
                "call. Set `memory_backbone` to an LLM (e.g. memory_backbone=smollm2_135m, or "
                "memory_backbone=same_as_agent, which falls back to the embedded model)."
            )
        if "episode_key" not in request.meta:
            raise ConfigError(
                f"memarena: backbone {self.name} needs meta['episode_key'] (e.g. "
                "'run:task_id:step') on every request to draw its noise deterministically."
            )
        expert = request.meta["expert_action"]
        rng = random.Random(self._stream(str(request.meta["episode_key"])))
        noisy = rng.random() < self.epsilon
        if not noisy and expert is not None and expert not in choices:
            # The expert types its action: envs whose admissible list misses some valid
            # spellings (ScienceWorld) must not leak the gold action into an LLM's choices.
            return Completion(text=expert)
        if noisy or expert is None:
            index = rng.randrange(len(choices))
        else:
            index = choices.index(expert)
        return Completion(text=choices[index], choice_index=index)

    def _stream(self, episode_key: str) -> int:
        digest = hashlib.sha256(f"{self.seed}\x1f{episode_key}".encode()).digest()
        return int.from_bytes(digest[:8], "big")
