"""What one job of a sweep needs from a cluster, read from the job's composed config.

The rules (docs/clusters.md):

- **GPUs** come from the backbone preset: an in-process vLLM preset declares
  ``resources: {gpus: ${..tensor_parallel_size}}``; a backbone without ``resources`` (an
  endpoint such as ``openai_server`` / ``gpt_4o_mini``, the embedded CPU model, ``scripted``)
  needs none. A memory backbone of its own runs in the same process: the job needs the larger
  of the two declarations (two in-process engines share the GPUs, see :func:`check_colocation`).
- **CPUs**: what the env needs (``env.resources.cpus``: 2 for ScienceWorld, whose JVM simulator
  runs beside the agent loop, and AppWorld, whose environment server does; 1 for the others),
  or the larger ``resources.cpus`` a backbone preset declares. A launcher option set by hand
  (``hydra.launcher.ray.remote.num_gpus``, ``hydra.launcher.gpus_per_node``, ...) wins over
  both.

Two in-process vLLM engines in one process (agent + memory backbone) must fit together on one
GPU's worth of memory, and the user must say so (``memory_backbone.resources.share_gpus``):
otherwise :func:`check_colocation` refuses the run before anything is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.core import ConfigError

# the keys of a preset's `resources` node, and their types
RESOURCE_KEYS: dict[str, type] = {"gpus": int, "cpus": int, "share_gpus": bool}


@dataclass(frozen=True, order=True)
class JobResources:
    """What one job takes from a node: whole GPUs and CPUs."""

    gpus: int = 0
    cpus: int = 1

    def label(self) -> str:
        return f"{self.gpus} GPU{'' if self.gpus == 1 else 's'}, {self.cpus} CPU"


def declared(node: Any, where: str) -> dict[str, Any]:
    """The ``resources`` a backbone node declares (``{}`` without), its keys and types checked:
    a bad key or value ends the run with one message naming it."""
    if not isinstance(node, (DictConfig, Mapping)) or node.get("resources") is None:
        return {}
    raw = node["resources"]
    plain = OmegaConf.to_container(raw, resolve=True) if isinstance(raw, DictConfig) else raw
    if not isinstance(plain, Mapping):
        raise ConfigError(
            f"memarena: {where}.resources={plain!r} must be a mapping such as {{gpus: 1}} "
            f"(keys: {', '.join(RESOURCE_KEYS)})."
        )
    for key, value in plain.items():
        kind = RESOURCE_KEYS.get(str(key))
        if kind is None:
            raise ConfigError(
                f"memarena: {where}.resources.{key} is not a resource key. Valid keys: "
                f"{', '.join(RESOURCE_KEYS)}. Fix or remove it; the run did not start."
            )
        ok = isinstance(value, bool) if kind is bool else (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        )  # fmt: skip
        if not ok:
            what = "true or false" if kind is bool else "a whole number >= 0"
            raise ConfigError(
                f"memarena: {where}.resources.{key}={value!r} must be {what}; the run did not "
                "start."
            )
    return dict(plain)


def _memory_node(cfg: DictConfig) -> tuple[Any, str]:
    """The node of the LLM a memory method may build, and its config path."""
    mb = cfg.get("memory_backbone")
    if not isinstance(mb, DictConfig):
        return None, ""
    if mb.get("same_as_agent", False):
        return mb.get("fallback"), "memory_backbone.fallback"
    return mb, "memory_backbone"


def job_resources(cfg: DictConfig) -> JobResources:
    """What the job ``cfg`` (a composed run config) needs; see the module docstring."""
    agent = declared(cfg.get("backbone"), "backbone")
    node, where = _memory_node(cfg)
    memory = declared(node, where) if node is not None else {}
    env = declared(cfg.get("env"), "env")
    gpus = max(int(agent.get("gpus", 0)), int(memory.get("gpus", 0)))
    cpus = max(1, *(int(d.get("cpus", 1)) for d in (agent, memory, env)))
    return JobResources(gpus=gpus, cpus=cpus)


def _in_process_gpu(node: Any) -> bool:
    """A backbone that loads an engine taking a share of each GPU (vLLM's offline engine)."""
    return isinstance(node, DictConfig) and "gpu_memory_utilization" in node


def preset_name(name: str) -> str:
    """A backbone's result name as its preset file's name: ``qwen3-14b`` -> ``qwen3_14b``."""
    return str(name).replace("-", "_")


def check_colocation(cfg: DictConfig) -> None:
    """Refuse (one ConfigError, before anything is loaded) an agent backbone and a memory backbone
    that are both in-process vLLM engines, unless their ``gpu_memory_utilization`` add up to at
    most 1 and ``memory_backbone.resources.share_gpus`` is true. Checks every ``resources``
    declaration of the job on the way (:func:`job_resources`)."""
    job_resources(cfg)
    agent, mb = cfg.get("backbone"), cfg.get("memory_backbone")
    if not isinstance(mb, DictConfig) or mb.get("same_as_agent", False):
        return
    if not (_in_process_gpu(agent) and _in_process_gpu(mb)):
        return
    a, m = float(agent.gpu_memory_utilization), float(mb.gpu_memory_utilization)
    share = bool(declared(mb, "memory_backbone").get("share_gpus", False))
    total = a + m
    if share and total <= 1.0 + 1e-9:
        return
    fits = total <= 1.0 + 1e-9
    split_a = int(a / total * 90) / 100  # the same ratio, 0.9 of a GPU in all
    split_m = int(m / total * 90) / 100
    why = (
        "together they fit (at most 1), but sharing GPUs between two engines must be asked for"
        if fits
        else f"together {total:g} of each GPU's memory, which cannot fit"
    )
    raise ConfigError(
        f"memarena: backbone={agent.get('name')} (gpu_memory_utilization={a:g}) and "
        f"memory_backbone={mb.get('name')} (gpu_memory_utilization={m:g}) would both load an "
        f"in-process vLLM engine in this one job, on the same GPUs: {why}. The endpoint way: "
        f"serve the memory model once (python scripts/serve.py "
        f"backbone={preset_name(mb.get('name'))}) and use the memory_backbone=openai_server "
        "override it prints. Or split one GPU's worth and say so: "
        f"backbone.gpu_memory_utilization={split_a:g} "
        f"memory_backbone.gpu_memory_utilization={split_m:g} "
        "memory_backbone.resources.share_gpus=true (weights and KV cache must fit in each "
        "share). Nothing was loaded."
    )
