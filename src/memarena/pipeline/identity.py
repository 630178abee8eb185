"""What a run directory records about how its records were made.

- :func:`config_identity`: the resolved config's keys that change results, flattened
  (``protocol.step_budget``, ``method.threshold``, ...). Keys that only say where things go or
  how fast they run are left out (paths, logging, the report node, lockstep concurrency, thread
  and batch sizes, caches, retries, the server endpoint and GPU placement), and so is
  ``protocol.max_eval_tasks``: raising the evaluation cap extends a run with the same tasks
  first. Keys added after runs were made are recorded only away from their default
  (:data:`ADDED_KEYS`), so an older run made with that default still resumes. A resume with
  another identity is refused (:meth:`~memarena.results.store.RunStore.check_identity`).
- :func:`snapshot_pin`: an evaluation from another run's snapshot (``protocol.snapshot_from``)
  adds the sha256 of that snapshot's ``memory.json`` to its identity, so a resume after that run
  was redone (other memory behind the same path) is refused naming the snapshot.
- :func:`run_info`: the code (git commit, dirty tree, and the sha256 of the uncommitted changes
  to ``src/`` and ``conf/``, untracked files there included: ``git_untracked`` names them), the
  packages that matter, the host and the Python, for
  ``run_info.json``. A resume on other code is refused unless ``protocol.allow_code_change``
  (:meth:`~memarena.results.store.RunStore.begin_invocation`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.results.metrics import flatten
from memarena.results.store import SNAPSHOT_PIN, snapshot_sha256

# top-level groups and exact keys that do not change results
NOT_RESULT = (
    "hydra",
    "paths",
    "logger",
    "report",
    "seed_varies",  # what the experiment file says of its seeds (documentation)
    "experiment_name",  # in the run directory's path already
    "protocol.resume",
    "protocol.concurrency",
    "protocol.max_eval_tasks",
    "protocol.retry_errors",
    "protocol.max_failed_batches",
    "protocol.max_error_rate",  # when a run stops, not what it computes
    "protocol.record_prompts",
    "protocol.record_memory",
    "protocol.allow_code_change",  # checked against run_info.json, recorded there
    "backbone.resources",  # what a launcher reserves for the job (memarena.launch)
    "memory_backbone.resources",
    "memory_backbone.fallback.resources",
    "env.resources",
)
# result-changing keys added after runs were recorded: in the identity only when set away from
# this default (the default is what those runs did), e.g. ReMe's official dynamic setting
ADDED_KEYS = {
    "protocol.count_retries": False,  # the last trial of a retried task counts
    "protocol.memory_across_runs": False,  # the runs of a repetition share one memory
    "protocol.episode_timeout_s": None,  # episodes cut at a wall-clock limit (status timeout)
    "protocol.prompt_layout": "memarena",  # the agent's prompt (reme_bfcl: ReMe's released one)
}
# key names (last component) that set speed or bookkeeping, wherever they stand
NOT_RESULT_LEAVES = frozenset(
    {
        "cache_path",
        "cache_dir",
        "converted_dir",
        "download_dir",
        "num_threads",
        "batch_size",
        "prefix_cache_tokens",
        "concurrency",
        "timeout",
        "max_retries",
        "backoff_s",
        "workers",
        "max_idle_jvms",
        "init_timeout",
        "finish_wait_s",
        "base_url",  # another endpoint serving the same model (clusters)
        "api_key_env",
        "gpu_memory_utilization",
        "tensor_parallel_size",
        "enforce_eager",
    }
)
# the tracked folders whose uncommitted changes count as a code change on resume
CODE_PATHS = ("src", "conf")
PACKAGES = (
    "memarena",
    "torch",
    "transformers",
    "vllm",
    "openai",
    "sentence-transformers",
    "hydra-core",
    "alfworld",
    "textworld",
    "scienceworld",
    "bfcl-eval",
    "llguidance",
)


def config_identity(cfg: DictConfig) -> dict[str, Any]:
    """The result-changing keys of ``cfg``, resolved and flattened with ``.``."""
    body = OmegaConf.to_container(
        OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]), resolve=True
    )
    flat = flatten(body, sep=".")
    return {
        key: value
        for key, value in sorted(flat.items())
        if not _excluded(key)
        and not isinstance(value, dict)
        and not (key in ADDED_KEYS and value == ADDED_KEYS[key])
    }


def snapshot_pin(folder: Path | None) -> dict[str, Any]:
    """The identity key pinning the snapshot an evaluation starts from (``{}`` without one)."""
    return {SNAPSHOT_PIN: snapshot_sha256(folder)} if folder is not None else {}


def _excluded(key: str) -> bool:
    if any(key == k or key.startswith(k + ".") for k in NOT_RESULT):
        return True
    parts = key.split(".")
    # list items flatten to numeric components: look at the last named one
    named = [p for p in parts if not p.isdigit()]
    return bool(named) and named[-1] in NOT_RESULT_LEAVES


def run_info(started: float) -> dict[str, Any]:
    """Code, packages, host and start time of this run."""
    return {
        **_git(Path(__file__).resolve().parents[3]),
        "packages": {name: _version(name) for name in PACKAGES},
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(root: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    # new files that make results: a method or config added as docs/extending.md describes,
    # not yet committed (git-ignored files, tests and docs aside)
    untracked = (
        git("ls-files", "--others", "--exclude-standard", "-z", "--", *CODE_PATHS)
        if commit
        else None
    )
    new_files = sorted(f for f in (untracked or "").split("\0") if f)
    # what "the same code" means on a dirty tree: the commit, the uncommitted changes to the
    # tracked files that make results (src/, conf/) and the content of the untracked ones there
    diff = git("diff", "HEAD", "--no-ext-diff", "--binary", "--", *CODE_PATHS) if status else None
    digest = hashlib.sha256((diff or "").encode())
    for name in new_files:
        digest.update(f"\0untracked\0{name}\0".encode())
        try:
            digest.update((root / name).read_bytes())
        except OSError:  # removed since git listed it
            continue
    return {
        "git_commit": commit,
        "git_dirty": bool(status) or bool(new_files) if status is not None else None,
        "git_diff_sha256": digest.hexdigest() if diff or new_files else None,
        **({"git_untracked": new_files} if new_files else {}),
    }
