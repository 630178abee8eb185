"""The agent: the policy that decides, prompt building, action parsing, the batched runner."""

from memarena.agent.policy import Decision, ExpertPolicy, LLMPolicy, Policy, as_policy
from memarena.agent.runner import EpisodeResult, EpisodeRunner, RunnerSettings

__all__ = [
    "Decision",
    "EpisodeResult",
    "EpisodeRunner",
    "ExpertPolicy",
    "LLMPolicy",
    "Policy",
    "RunnerSettings",
    "as_policy",
]
