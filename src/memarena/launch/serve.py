"""One served model for many jobs (``scripts/serve.py backbone=<preset>``): the server command a
backbone preset needs, and the overrides that point a sweep at it.

- an in-process vLLM preset (``qwen3_*``, ``qwen2.5_7b``): ``vllm serve`` with the preset's model,
  tensor parallelism, context length, GPU share, dtype and prefix caching, Qwen's tool-call
  parser (``hermes``) and the preset's thinking switch as the server's default;
- the embedded model (``smollm2_135m``, ``smollm2_135m_vllm``, a ``.gguf``): llama-cpp-python's
  server on the CPU;
- endpoints (``openai_server``, ``gpt_4o_mini``) and ``scripted`` serve nothing: refused.

Both bind 127.0.0.1 unless told otherwise and take an API key from an environment variable.
Many jobs then share the model (continuous batching across jobs): ``launcher=joblib`` or a Slurm
CPU array with ``backbone=openai_server backbone.base_url=...``.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memarena.core import ConfigError
from memarena.llm.embedded import is_embedded, resolve_embedded_llm

LLAMA_CPP_ALIAS = "smollm2-135m"  # the served name of the embedded model (llm.local_server's)


@dataclass
class ServePlan:
    """How to serve one preset: the command, the served model name, what clients must set."""

    kind: str  # "vllm" | "llama.cpp"
    command: list[str]
    served_name: str
    result_name: str  # backbone.name the clients' results go under
    client: dict[str, Any] = field(default_factory=dict)  # openai_server keys besides the URL

    def shell(self) -> str:
        return " ".join(shlex.quote(a) for a in self.command)


def _flag(key: str) -> str:
    return "--" + str(key).replace("_", "-")


def _vllm_command(bb: Mapping[str, Any], host: str, port: int, api_key: str | None) -> ServePlan:
    model = str(bb["model"])
    cmd = ["vllm", "serve", model, "--served-model-name", model, "--host", host,
           "--port", str(port), "--tensor-parallel-size", str(bb.get("tensor_parallel_size", 1)),
           # sampling defaults from each request only, as the offline engine samples
           "--generation-config", "vllm"]  # fmt: skip
    for key, flag in (("max_model_len", "--max-model-len"), ("dtype", "--dtype"),
                      ("gpu_memory_utilization", "--gpu-memory-utilization"),
                      ("download_dir", "--download-dir"), ("chat_template", "--chat-template"),
                      ("seed", "--seed")):  # fmt: skip
        if bb.get(key) is not None:
            cmd += [flag, str(bb[key])]
    for key in ("trust_remote_code", "enforce_eager"):
        if bb.get(key):
            cmd.append(_flag(key))
    for key, value in dict(bb.get("engine_kwargs") or {}).items():
        if value is True:
            cmd.append(_flag(key))  # enable_prefix_caching -> --enable-prefix-caching
        elif value is False:
            cmd.append("--no-" + _flag(key)[2:])
        elif value is not None:
            text = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
            cmd += [_flag(key), text]
    template_kwargs = dict(bb.get("chat_template_kwargs") or {})
    if bb.get("enable_thinking") is not None:
        template_kwargs["enable_thinking"] = bool(bb["enable_thinking"])
    if template_kwargs:
        cmd += ["--default-chat-template-kwargs", json.dumps(template_kwargs)]
    if "qwen" in model.lower():  # Qwen's <tool_call> blocks come back as tool_calls
        cmd += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    if api_key:
        cmd += ["--api-key", api_key]
    client = {"structured": "vllm", "chat_template_kwargs": template_kwargs}
    return ServePlan("vllm", cmd, model, f"{bb.get('name', model)}-server", client)


def _llama_cpp_command(
    bb: Mapping[str, Any], host: str, port: int, api_key: str | None, threads: int | None
) -> ServePlan:
    model = str(bb["model"])
    if is_embedded(model):
        folder, gguf = resolve_embedded_llm(model)
        path = folder / gguf
    else:
        path = model if not bb.get("gguf_file") else os.path.join(model, str(bb["gguf_file"]))
    n = threads or (bb.get("num_threads") if isinstance(bb.get("num_threads"), int) else None)
    n = n or max(1, (os.cpu_count() or 2) // 2)
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path),
           "--model_alias", LLAMA_CPP_ALIAS, "--host", host, "--port", str(port),
           "--n_ctx", "8192", "--n_threads", str(n)]  # fmt: skip
    if api_key:
        cmd += ["--api_key", api_key]
    # llama-cpp-python's server: JSON mode (json_object) only, no Qwen template switch
    client = {"structured": "json_object", "chat_template_kwargs": {}}
    return ServePlan("llama.cpp", cmd, LLAMA_CPP_ALIAS, f"{bb.get('name', 'model')}-server",
                     client)  # fmt: skip


def plan_server(
    backbone: Mapping[str, Any],
    preset: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    threads: int | None = None,
) -> ServePlan:
    """The server for the resolved backbone node ``backbone`` of preset ``preset``."""
    target = str(backbone.get("_target_", ""))
    model = str(backbone.get("model", ""))
    if "model" not in backbone or target.endswith("ExpertPolicy"):
        raise ConfigError(
            f"memarena: backbone={preset} is not a model (the scripted expert): nothing to "
            "serve. Choose a model preset, e.g. backbone=qwen3_8b or backbone=smollm2_135m."
        )
    if "base_url" in backbone:
        raise ConfigError(
            f"memarena: backbone={preset} is already an endpoint ({backbone['base_url']}): "
            "nothing to serve. Serve a model preset (backbone=qwen3_8b, backbone=smollm2_135m) "
            "and point backbone=openai_server at it."
        )
    if is_embedded(model) or model.endswith(".gguf") or backbone.get("gguf_file"):
        return _llama_cpp_command(backbone, host, port, api_key, threads)
    return _vllm_command(backbone, host, port, api_key)


def public_host(host: str) -> str:
    """The host clients use: this machine's name for a wildcard bind."""
    if host in ("0.0.0.0", "::", ""):
        return socket.getfqdn() or socket.gethostname()
    return host


def client_overrides(
    plan: ServePlan, base_url: str, api_key_env: str | None, group: str = "backbone"
) -> list[str]:
    """The command-line overrides pointing ``group`` (backbone or memory_backbone) at the server."""
    out = [f"{group}=openai_server", f"{group}.base_url={base_url}",
           f"{group}.model={plan.served_name}", f"{group}.name={plan.result_name}"]  # fmt: skip
    for key, value in plan.client.items():
        text = _hydra_value(value)
        default = {"structured": "vllm", "chat_template_kwargs": "{enable_thinking:false}"}
        if default.get(key) != text:  # the openai_server preset's own values need no override
            out.append(f"{group}.{key}={text}")
    if api_key_env:
        out.append(f"{group}.api_key_env={api_key_env}")
    return [shlex.quote(o) for o in out]


def _hydra_value(value: Any) -> str:
    """A plain value in Hydra's override grammar: ``{enable_thinking:false}``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_hydra_value(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)
