"""Stage 0: check the composed config, then build the parts of one run from it.

The config is checked whole before anything is built (:mod:`memarena.pipeline.validate`), so a
misspelled key never costs a model load or an env set-up. Parts are built with
``hydra.utils.instantiate``; the pipeline never branches on method or env names.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from memarena.agent import LLMPolicy, Policy, RunnerSettings, as_policy
from memarena.core import Backbone, ConfigError, Env, MemarenaError, MemoryMethod, MemoryServices
from memarena.core.env import env_family
from memarena.launch.resources import check_colocation
from memarena.memory.team import DomainTeam
from memarena.pipeline.ending import close_invocation, quietly
from memarena.pipeline.identity import config_identity, run_info, snapshot_pin
from memarena.pipeline.protocol import ProtocolSettings
from memarena.pipeline.validate import validate
from memarena.results import store as files
from memarena.results.store import RunStore, run_dir_for, snapshot_marker, verify_snapshot

log = logging.getLogger(__name__)


@dataclass
class Parts:
    """What one run is made of. ``snapshot_from``: the memory folder evaluation starts from
    instead of acquiring (``protocol.snapshot_from`` resolved), else None."""

    env: Env
    policy: Policy
    memory: MemoryMethod
    services: MemoryServices
    settings: RunnerSettings
    protocol: ProtocolSettings
    store: RunStore
    snapshot_from: Path | None = None
    # the run's private copy of ``snapshot_from`` (every load reads it) and the sha256 it pinned
    snapshot_copy: Path | None = None
    snapshot_sha: str | None = None
    # what the run holds until it ends (the run directory's lock, the snapshot's shared lock)
    holding: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


def run_dir(cfg: DictConfig, experiment: str | None = None, ablation: Any = "same") -> Path:
    """The run directory of ``cfg`` (or of the same cell in another experiment/ablation)."""
    return run_dir_for(
        cfg.paths.results_dir,
        experiment or cfg.experiment_name,
        cfg.env.name,
        cfg.method.name,
        cfg.ablation.get("name") if ablation == "same" else ablation,
        cfg.backbone.name,
        cfg.seed,
    )


def check_config(cfg: DictConfig) -> None:
    """Cross-group consistency that a single config group cannot check by itself."""
    for group in ("env", "method", "backbone"):
        if "name" not in cfg[group]:
            raise ConfigError(f"conf/{group}/*.yaml must set `name` (used in result paths)")
    wanted = cfg.ablation.get("method")
    if wanted is not None and wanted != cfg.method.name:
        raise ConfigError(
            f"ablation={cfg.ablation.name} belongs to method={wanted}, but method="
            f"{cfg.method.name}. Add method={wanted} or drop the ablation."
        )
    for group, name in (cfg.ablation.get("requires") or {}).items():
        if group not in cfg or cfg[group].get("name") != name:
            have = cfg[group].get("name") if group in cfg else None
            raise ConfigError(
                f"ablation={cfg.ablation.name} measures {group} {name!r}, but this run's {group} "
                f"is {have!r}. Choose the {group} option named {name!r} (its experiment file "
                "does), or drop the ablation."
            )


def build_part(node: DictConfig, **kwargs: Any) -> Any:
    """``instantiate`` that lets a constructor's own MemarenaError (a config message) through
    instead of Hydra's wrapper, so the run ends with that one message."""
    try:
        return instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as exc:
        cause = exc.__cause__
        while cause is not None and not isinstance(cause, MemarenaError):
            cause = cause.__cause__
        if cause is not None:
            raise cause from None
        raise


RELEASED_SUFFIXES = (".jsonl", ".json")  # protocol.snapshot_from naming a released file


def snapshot_source(
    cfg: DictConfig, value: str | None, memory: MemoryMethod | None = None
) -> Path | None:
    """``protocol.snapshot_from`` as a folder: an experiment name is this cell's run in that
    experiment (same env, method, backbone and seed, no ablation) in the results layout; a
    value with a ``/`` is a run directory or its ``memory/`` folder, or a file a paper's
    authors released (ReMe's pools), converted by ``memory`` into a snapshot once
    (:func:`released_snapshot`). A snapshot acquired on another env than ``cfg.env.name`` is
    refused."""
    if not value:
        return None
    text = str(value)
    base = Path(text).expanduser() if "/" in text else run_dir(cfg, text, ablation=None)
    if base.suffix in RELEASED_SUFFIXES and not base.exists():
        raise ConfigError(
            f"memarena: protocol.snapshot_from={text}: no such file. A released memory file is "
            "read as its authors ship it (ReMe's pools: docs/library/paper_data/task/"
            f"{base.name} in agentscope-ai/ReMe); copy it to {base.parent} "
            "(paths.released_dir), or unset protocol.snapshot_from."
        )
    if base.is_file() and memory is not None:
        base = released_snapshot(cfg, base, memory)
    for folder in (base / files.MEMORY_DIR, base):
        if (folder / files.SNAPSHOT_DONE).exists():
            verify_snapshot(folder)
            source = snapshot_env(folder)
            if source is not None and source != cfg.env.name:
                raise ConfigError(
                    f"memarena: protocol.snapshot_from={text}: the snapshot {folder} was "
                    f"acquired on env.name={source}, and this run's env.name is {cfg.env.name}. "
                    f"A memory holds one benchmark's tasks and actions: evaluate it on {source}, "
                    f"or give protocol.snapshot_from a run made on {cfg.env.name}."
                )
            check_snapshot_run(cfg, folder, text)
            return folder
    what = f"experiment {text!r}" if "/" not in text else "the folder"
    raise ConfigError(
        f"memarena: protocol.snapshot_from={text}: {what} has no complete memory snapshot at "
        f"{base / files.MEMORY_DIR} ({files.SNAPSHOT_DONE} missing). Run that experiment first "
        "(same env, method, backbone and seed), or unset protocol.snapshot_from."
    )


def released_snapshot(cfg: DictConfig, path: Path, memory: MemoryMethod) -> Path:
    """A released memory file as a snapshot folder of this method, written once under
    ``paths.cache_dir/released_memory`` (named by the file's and the settings' sha256, so a
    changed file or setting converts again); its marker names the source file and its sha256.
    ``memory`` reads the file (:meth:`MemoryMethod.import_released`) and is left holding it."""
    source_sha = files.file_sha256(path)
    settings_sha = hashlib.sha256(
        json.dumps(memory.settings.to_dict(), sort_keys=True, default=str).encode()
    ).hexdigest()
    folder = (
        Path(cfg.paths.cache_dir).expanduser() / "released_memory" / memory.name
        / f"{path.stem}-{source_sha[:12]}-{settings_sha[:8]}"
    )  # fmt: skip
    if not (folder / files.SNAPSHOT_DONE).exists():
        memory.import_released(path)
        memory.save(folder)
        files.mark_complete(
            folder,
            {"method": memory.name, "env": cfg.env.name, "memory_size": memory.size(),
             "released_file": str(path), "released_sha256": source_sha},
        )  # fmt: skip
        log.info("protocol.snapshot_from=%s: converted into the snapshot %s", path, folder)
    return folder


def snapshot_env(folder: Path) -> str | None:
    """The env a snapshot was acquired on: its marker's ``env``, else (a marker written
    before it recorded one) ``env.name`` in the identity of the run directory holding it;
    None when neither says."""
    env = snapshot_marker(folder).get("env")
    if env:
        return str(env)
    source = source_run(folder)
    if source is None:
        return None
    try:
        identity = json.loads((source / files.IDENTITY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    env = identity.get("env.name") if isinstance(identity, dict) else None
    return str(env) if env else None


def source_run(folder: Path) -> Path | None:
    """The run directory holding a snapshot folder (``memory/``, ``memory_final/[<view>/]
    run<k>/``): the nearest parent with an ``identity.json``; None when there is none."""
    for parent in list(folder.parents)[:3]:
        if (parent / files.IDENTITY).is_file():
            return parent
    return None


# what a snapshot was acquired with: the keys an evaluation from it must share
SNAPSHOT_KEYS = (
    "seed",
    "method.name",
    "backbone.name",
    "protocol.max_train_tasks",
    "protocol.train_split",
    "protocol.domain_memories",
)


def check_snapshot_run(cfg: DictConfig, folder: Path, value: str) -> None:
    """Refuse a ``protocol.snapshot_from`` experiment whose snapshot was built under another
    experiment name, seed, method, backbone, train cap, train split or domain setting than
    this run names (a renamed experiment that still points at the default one would evaluate
    someone else's memory without a word); a folder given by path is the user's explicit
    choice: warned, not refused. Both identities are in the message. A snapshot that holds
    nothing is warned about (the run is flagged ``degenerate_memory``)."""
    source = source_run(folder)
    config = source / files.CONFIG if source is not None else None
    if config is not None and config.is_file():
        theirs = OmegaConf.load(config)
        wanted = {"experiment_name": value} if "/" not in value else {}
        wanted.update({k: OmegaConf.select(cfg, k, default=None) for k in SNAPSHOT_KEYS})
        diff = [
            (k, OmegaConf.select(theirs, k, default=None), v)
            for k, v in wanted.items()
            if OmegaConf.select(theirs, k, default=None) != v
        ]
        if diff:
            lines = "; ".join(f"{k}: the snapshot's {a!r}, this run's {b!r}" for k, a, b in diff)
            text = (
                f"memarena: protocol.snapshot_from={value}: the snapshot {folder} was built by "
                f"another configuration than this run names ({lines}). This run: "
                f"{run_dir(cfg)}; the snapshot's: {source}."
            )
            if "/" in value:
                log.warning("%s Evaluating it as asked.", text)
            else:
                raise ConfigError(
                    f"{text} Acquire the snapshot with this run's settings first (the same "
                    "experiment_name, seed and caps), point protocol.snapshot_from at that run "
                    "(an experiment name or a run folder), or give this run the snapshot's "
                    "settings."
                )
    if snapshot_marker(folder).get("memory_size") == 0:
        log.warning(
            "protocol.snapshot_from=%s: the snapshot %s holds no memory (memory_size 0); this "
            "evaluation runs with an empty memory and is flagged degenerate_memory",
            value,
            folder,
        )


def _memory_llm_factory(cfg: DictConfig, policy: Policy):
    mb = cfg.memory_backbone

    def build_llm() -> Backbone:
        if mb.get("same_as_agent", False):
            if isinstance(policy, LLMPolicy):
                return policy.backbone
            log.info(
                "the agent %s is not an LLM; memory calls use %s", policy.name, mb.fallback.name
            )
            return build_part(mb.fallback)
        # resolved first: a detached copy cannot see ${paths...} interpolations any more
        plain = OmegaConf.to_container(mb, resolve=True)
        plain.pop("same_as_agent", None)
        return build_part(OmegaConf.create(plain))

    return build_llm


def build(
    cfg: DictConfig, choices: Mapping[str, Any] | None = None, overrides: Sequence[str] = ()
) -> Parts:
    """Check ``cfg`` (``choices`` / ``overrides`` name the source of a bad key), then build:
    the memory first (cheap; its snapshot source is checked before any model or env is
    loaded), then the env and the policy."""
    validate(cfg, choices, overrides)
    check_config(cfg)
    check_colocation(cfg)  # two in-process vLLM engines: refused before any model loads
    protocol = ProtocolSettings.from_config(OmegaConf.to_container(cfg.protocol, resolve=True))
    agent: dict[str, Policy] = {}  # the memory's LLM factory reads the policy built below
    services = MemoryServices(
        llm_factory=lambda: _memory_llm_factory(cfg, agent["policy"])(),
        embedder_factory=lambda: build_part(cfg.embedder),
        seed=cfg.seed,
        named_embedder_factory=lambda model, normalize: build_part(
            OmegaConf.merge(cfg.embedder, {"name": model, "model": model, "normalize": normalize})
        ),
    )
    memory: MemoryMethod = build_part(cfg.method, services=services, env_name=cfg.env.name)
    if (
        protocol.domain_memories == "per_domain"
        and memory.learns
        and not memory.own_domain_memories
    ):
        memory = DomainTeam(
            lambda: build_part(cfg.method, services=services, env_name=cfg.env.name), memory
        )
    # a method without memory (none, icl) has no snapshot to start from
    snapshot = snapshot_source(cfg, protocol.snapshot_from, memory) if memory.learns else None
    store = RunStore(run_dir(cfg))
    fresh = store.is_empty()  # nothing here before this invocation: removed if the build fails
    holding = contextlib.ExitStack()
    holding.enter_context(store.lock())  # released when the run ends (close_parts)
    began, built = time.perf_counter(), []
    try:
        if not protocol.resume:
            store.clear()
        pin = snapshot_pin(snapshot)
        store.check_identity(
            {**config_identity(cfg), **pin}, OmegaConf.to_yaml(cfg, resolve=True), snapshot
        )
        # loaded from a private copy, the source held shared: a rebuild cannot reach this run
        copy = None
        if snapshot is not None:
            copy = holding.enter_context(files.pinned_copy(snapshot, pin[files.SNAPSHOT_PIN]))
        info = {**run_info(time.time()), "method_settings": memory.settings.to_dict()}
        store.begin_invocation(info, protocol.allow_code_change)
        env: Env = build_part(cfg.env)
        built.append(env)
        policy = agent["policy"] = as_policy(build_part(cfg.backbone))
        check_layout(protocol, env, policy)
    except BaseException as exc:  # the invocation ends here: close what was opened
        for part in built:
            quietly(f"closing {type(part).__name__}", part.close, exc)
        close_invocation(store, time.perf_counter() - began, exc)
        holding.close()
        if fresh:  # a failed data check or model load leaves no empty run folder behind
            quietly(f"removing {store.dir}", lambda: store.remove(cfg.paths.results_dir), exc)
        raise
    # a method whose mechanism is the agent's in-task window sets it (MemoryBank, parity mode)
    history = protocol.history_steps if memory.history_steps is None else memory.history_steps
    settings = RunnerSettings(
        concurrency=protocol.concurrency,
        step_budget=protocol.budget_for(memory.name) or env.step_budget,
        history_steps=history,
        action_mode=protocol.action_mode,
        temperature=protocol.temperature,
        max_tokens=protocol.max_tokens or env.max_tokens,
        stop=tuple(protocol.stop or ()),
        seed=cfg.seed,
        max_failed_batches=protocol.max_failed_batches,
        episode_timeout_s=protocol.episode_timeout_s,
        record_prompts=protocol.record_prompts,
        record_memory=protocol.record_memory,
        prompt_format=protocol.prompt_format,
        prompt_layout=protocol.prompt_layout,
        tool_calls=protocol.tool_calls,
        agent_loop=protocol.agent_loop,
        history_observation_chars=memory.history_observation_chars,
    )
    parts = Parts(env, policy, memory, services, settings, protocol, store, snapshot, copy,
                  pin.get(files.SNAPSHOT_PIN))  # fmt: skip
    parts.holding = holding
    return parts


def check_layout(protocol: ProtocolSettings, env: Env, policy: Policy) -> None:
    """``protocol.prompt_layout: reme_bfcl`` sends no system message, so the functions reach
    the agent only as the request's tools: it needs BFCL, ``protocol.tool_calls: native`` and
    a backbone that takes tools."""
    if protocol.prompt_layout != "reme_bfcl":
        return
    family = env_family(getattr(env, "name", ""))
    if family != "bfcl":
        raise ConfigError(
            f"memarena: protocol.prompt_layout=reme_bfcl is the prompt of ReMe's released BFCL "
            f"agent; env={env.name} needs protocol.prompt_layout=memarena."
        )
    if protocol.tool_calls != "native" or not policy.native_tools:
        raise ConfigError(
            "memarena: protocol.prompt_layout=reme_bfcl sends no system message: the functions "
            "reach the agent only as native tools, so it needs protocol.tool_calls=native and a "
            "backbone that takes tools (backbone.native_tools); or set "
            "protocol.prompt_layout=memarena."
        )


def close_parts(parts: Parts, *others: Policy) -> None:
    """Close the env, the policy, the memory's models and ``others``; never raises."""
    closing = [parts.env.close, parts.policy.close, *(p.close for p in others)]
    memory_llm = parts.services.llm_if_built
    agent_llm = parts.policy.backbone if isinstance(parts.policy, LLMPolicy) else None
    if memory_llm is not None and memory_llm is not agent_llm:
        closing.append(memory_llm.close)
    closing += [embedder.close for embedder in parts.services.embedders_built]
    for close in closing:
        try:
            close()
        except Exception as exc:
            log.warning("closing failed: %s", exc)
    parts.holding.close()
