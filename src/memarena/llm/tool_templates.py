"""Chat templates for native tool calls, shared by the engines that template prompts themselves
(hf, vLLM).

A backbone sends ``request.tools`` natively (``native_tools``) when the chat template it uses
renders tools (its text names ``tools``: Qwen2.5, Qwen3, ...) or when ``backbone.tools_template``
is set: ``hermes`` (memarena's ChatML template with Hermes/Qwen-style ``<tool_call>`` blocks,
``templates/hermes_tools.jinja``) or a path to a Jinja file. The tools template is applied only
to requests that carry tools; every other request keeps the backbone's own template, so its
prompt and its call-cache key do not change.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest

TEMPLATES = Path(__file__).resolve().parent / "templates"
BUILTIN = {"hermes": TEMPLATES / "hermes_tools.jinja"}
_NAMES_TOOLS = re.compile(r"\btools\b")


@dataclass(frozen=True)
class ToolsTemplate:
    """A Jinja chat template for requests with tools; ``identity`` goes into their cache keys
    (the name and a digest of the text, so an edited template is a new cache identity)."""

    text: str
    identity: str


def load_tools_template(spec: str | None) -> ToolsTemplate | None:
    """``None`` -> None; ``hermes`` -> the shipped template; else a path to a Jinja file."""
    if spec is None:
        return None
    spec = str(spec)
    path = BUILTIN.get(spec) or Path(spec).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(
            f"memarena: backbone.tools_template={spec} is neither a shipped tools template "
            f"({', '.join(BUILTIN)}) nor a readable Jinja file ({err.strerror or err}). Use "
            "hermes, a path to a chat template that renders `tools`, or null."
        ) from err
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    name = spec if spec in BUILTIN else path.name
    return ToolsTemplate(text=text, identity=f"{name}:{digest}")


def renders_tools(template: str | None) -> bool:
    """Whether a chat template takes tools (its text names the ``tools`` variable)."""
    return bool(template) and _NAMES_TOOLS.search(template) is not None


def template_args(
    request: ChatRequest,
    chat_template: str,
    tools_template: ToolsTemplate | None,
    native_tools: bool,
    name: str,
) -> dict[str, Any]:
    """The ``chat_template`` (and ``tools``) arguments of ``apply_chat_template`` for one
    request: the backbone's template without tools; with tools, the tools template when one is
    set, else the backbone's own (which renders them). A request with tools to a backbone
    without native tools is a ConfigError."""
    if request.tools is None:
        return {"chat_template": chat_template}
    if not native_tools:
        raise ConfigError(no_native_tools(name))
    template = tools_template.text if tools_template is not None else chat_template
    return {"chat_template": template, "tools": request.tools}


def no_native_tools(name: str) -> str:
    return (
        f"memarena: backbone {name} got a request with tools, but its chat template does not "
        "render tools. Set backbone.tools_template=hermes (memarena's ChatML template with "
        "<tool_call> blocks) or to a Jinja file that renders `tools` (the agent sends tools only "
        "to backbones whose native_tools is true)."
    )
