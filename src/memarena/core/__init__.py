"""Plain data types and the contracts everything plugs into (depends on nothing else here):
:mod:`~memarena.core.env` (benchmarks), :mod:`~memarena.core.memory` (memory methods),
:mod:`~memarena.core.protocols` (LLM backbones, embedders); :mod:`~memarena.core.tool_calls`
(native tool calls: the ``<tool_call>`` text form, chat messages, tool schemas)."""

from memarena.core.env import DEFAULT_MAX_TOKENS, Env, EnvPrompt, Episode
from memarena.core.errors import (
    ConfigError,
    MemarenaError,
    MemoryFrozenError,
    ServerUnreachableError,
)
from memarena.core.llm_types import (
    PROMPT_TOO_LONG,
    REQUEST_FAILED,
    ChatRequest,
    Completion,
    Message,
)
from memarena.core.memory import Capabilities, MemoryMethod, MemoryServices
from memarena.core.protocols import Backbone, Embedder
from memarena.core.tool_calls import (
    assistant_message,
    bfcl_tools,
    parse_tool_calls,
    render_tool_calls,
    to_openai_messages,
)
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
    "DEFAULT_MAX_TOKENS",
    "EPISODE_STATUSES",
    "PROMPT_TOO_LONG",
    "REQUEST_FAILED",
    "Backbone",
    "Capabilities",
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
    "MemoryServices",
    "Message",
    "Observation",
    "Outcome",
    "ServerUnreachableError",
    "Step",
    "StepResult",
    "Task",
    "Trajectory",
    "Usage",
    "assistant_message",
    "bfcl_tools",
    "parse_tool_calls",
    "render_tool_calls",
    "to_openai_messages",
]
