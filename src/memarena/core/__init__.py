"""Plain data types and interfaces shared by every part of memarena (depends on nothing)."""

from memarena.core.errors import ConfigError, MemarenaError, MemoryFrozenError
from memarena.core.llm_types import ChatRequest, Completion, Message
from memarena.core.protocols import Backbone, Embedder, Env, EnvPrompt, Episode, MemoryMethod
from memarena.core.types import (
    EPISODE_STATUSES,
    Feedback,
    MemoryContext,
    MemoryQuery,
    Observation,
    Outcome,
    Step,
    StepResult,
    Task,
    Trajectory,
    Usage,
)

__all__ = [
    "EPISODE_STATUSES",
    "Backbone",
    "ChatRequest",
    "Completion",
    "ConfigError",
    "Embedder",
    "Env",
    "EnvPrompt",
    "Episode",
    "Feedback",
    "MemarenaError",
    "MemoryContext",
    "MemoryFrozenError",
    "MemoryMethod",
    "MemoryQuery",
    "Message",
    "Observation",
    "Outcome",
    "Step",
    "StepResult",
    "Task",
    "Trajectory",
    "Usage",
]
