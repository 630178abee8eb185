"""The agent's decision-maker: a policy answers one :class:`Decision` per active episode.

- :class:`LLMPolicy`: an LLM backbone answers the decisions' chat requests in one batched call.
- :class:`ExpertPolicy`: the env's expert (``Episode.expert_action``) with epsilon noise, for
  fast tests and pipeline checks (``backbone=scripted``); ICL's acquisition uses it with
  epsilon 0. It is not an LLM: it makes no model call, costs no tokens, is named
  ``scripted-expert-...`` in every result path and reports ``is_llm = False``.

The runner builds every decision the same way and never asks what kind of policy it has; the
backbones and the call cache know nothing about experts.
"""

from __future__ import annotations

import ast
import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memarena.core import (
    Backbone,
    ChatRequest,
    Completion,
    ConfigError,
    Episode,
    Usage,
    render_tool_calls,
)


@dataclass
class Decision:
    """One episode's next action to choose: the prompt an LLM would answer, the episode (for
    the expert) and a stable key (``phase:run:task:step``) that seeds any random draw."""

    request: ChatRequest
    episode: Episode
    key: str


class Policy(ABC):
    """``decide`` answers a batch of decisions, one completion each, in order."""

    name: str
    is_llm: bool
    usage: Usage
    native_tools: bool = False  # takes a request's ``tools`` and answers with tool calls

    @abstractmethod
    def decide(self, decisions: Sequence[Decision]) -> list[Completion]: ...

    def reply_limit(self, request: ChatRequest) -> int | None:
        """The most tokens a free-text reply to ``request`` can have (None: not an LLM's
        reply, or a constrained one): a reply this long hit the cap."""
        return None

    def close(self) -> None:
        return None


class LLMPolicy(Policy):
    """The backbone answers every decision's request; one batched ``generate`` per step."""

    is_llm = True

    def __init__(self, backbone: Backbone) -> None:
        self.backbone = backbone
        self.name = backbone.name
        self.native_tools = bool(getattr(backbone, "native_tools", False))

    @property
    def usage(self) -> Usage:  # type: ignore[override]
        return self.backbone.usage

    def decide(self, decisions: Sequence[Decision]) -> list[Completion]:
        if not decisions:
            return []
        return self.backbone.generate([d.request for d in decisions])

    def reply_limit(self, request: ChatRequest) -> int | None:
        """The request's ``max_tokens``, lowered by the backbone's own cap where it has one
        (``max_new_tokens`` of the hf / vllm engines, ``max_tokens_cap`` of openai)."""
        if request.choices is not None or request.json_schema is not None:
            return None
        limit = max(1, int(request.max_tokens))
        for name in ("max_new_tokens", "max_tokens_cap"):
            cap = getattr(self.backbone, name, None)
            if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
                limit = min(limit, cap)
        return limit

    def close(self) -> None:
        self.backbone.close()


class ExpertPolicy(Policy):
    """The env's expert with noise: with probability ``epsilon``, or when the expert has no
    action, a uniformly random choice among the request's ``choices`` (for free-text envs: the
    episode's ``noise_actions``); otherwise the expert's action, typed as free text when it is
    not among the choices (ScienceWorld's list misses some valid spellings, and an LLM's
    choices must not leak the gold action). Each draw comes from a generator seeded by
    ``(seed, decision key)``, so answers do not depend on batch order or concurrency."""

    is_llm = False
    native_tools = True  # a call list is answered as <tool_call> blocks when tools are sent

    def __init__(
        self,
        epsilon: float = 0.1,
        seed: int = 0,
        name: str | None = None,
        enable_thinking: bool | None = None,
    ) -> None:
        # enable_thinking: taken and ignored (the expert does not think), so an experiment that
        # turns its LLM's thinking on (ReMe's BFCL files) also runs with backbone=scripted
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
        self.name = name
        self.epsilon = float(epsilon)
        self.seed = int(seed)
        self.usage = Usage()

    def decide(self, decisions: Sequence[Decision]) -> list[Completion]:
        if decisions:
            self.usage.calls += 1
            self.usage.requests += len(decisions)
        return [_as_tool_calls(self._act(d), d.request) for d in decisions]

    def _act(self, decision: Decision) -> Completion:
        choices = decision.request.choices or decision.episode.noise_actions()
        expert = decision.episode.expert_action()
        rng = random.Random(self._stream(decision.key))
        noisy = rng.random() < self.epsilon
        if not noisy and expert is not None and expert not in (choices or ()):
            return Completion(text=expert)
        if not choices:  # no list to draw from and no expert action: an empty reply
            return Completion(text=expert or "")
        if noisy or expert is None:
            index = rng.randrange(len(choices))
        else:
            index = choices.index(expert)
        if decision.request.choices is None:  # a free-text env: the draw is typed
            return Completion(text=choices[index])
        return Completion(text=choices[index], choice_index=index)

    def _stream(self, key: str) -> int:
        digest = hashlib.sha256(f"{self.seed}\x1f{key}".encode()).digest()
        return int.from_bytes(digest[:8], "big")


def _as_tool_calls(completion: Completion, request: ChatRequest) -> Completion:
    """With native tools, a Python call list (``[f(a=1), g()]``: the expert's form) becomes
    ``<tool_call>`` blocks, as a tool-calling model would answer; anything else is unchanged."""
    if not request.tools or completion.choice_index is not None:
        return completion
    calls = _call_list(completion.text)
    if not calls:
        return completion
    return replace(completion, text=render_tool_calls(calls))


def _call_list(text: str) -> list[dict] | None:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        nodes = tree.elts if isinstance(tree, ast.List) else [tree]
        calls = []
        for node in nodes:
            plain_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            if not plain_call or node.args or any(k.arg is None for k in node.keywords):
                return None
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            calls.append({"name": node.func.id, "arguments": args})
        return calls
    except (SyntaxError, ValueError, TypeError):
        return None


def as_policy(agent: Policy | Backbone) -> Policy:
    """What the ``backbone`` config group built, as a policy: an LLM backbone is wrapped in an
    :class:`LLMPolicy`; a policy (``backbone=scripted``) is returned as it is."""
    return agent if isinstance(agent, Policy) else LLMPolicy(agent)
