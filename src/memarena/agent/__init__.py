"""The agent: prompt building, action parsing and the batched episode runner."""

from memarena.agent.runner import EpisodeResult, EpisodeRunner, RunnerSettings

__all__ = ["EpisodeResult", "EpisodeRunner", "RunnerSettings"]
