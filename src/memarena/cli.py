"""What run.py calls: a config pre-check before Hydra, and the job body after it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from omegaconf import DictConfig

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.core import MemarenaError

log = logging.getLogger("memarena")

# Hydra flags whose next argument is a value, not an override.
_VALUE_FLAGS = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--info",
    "-i",
    "--experimental-rerun",
}


def command_line_overrides(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _VALUE_FLAGS:
            skip = arg != "--info"
            continue
        if arg.startswith("-") and not arg.startswith(("~", "+")):
            continue
        if arg.lstrip("+~").startswith(("hydra.", "hydra/")):
            continue
        out.append(arg)
    return out


def precheck(argv: list[str], conf_dir: Path) -> list[str]:
    """Exit with a one-paragraph message when the overrides name a bad choice or key; return
    the arguments with group shorthands expanded (``env.wiki=local`` -> ``env/wiki=local``)."""
    from memarena.config_check import check_overrides, expand_group_shorthand

    argv = expand_group_shorthand(argv)
    overrides = command_line_overrides(argv)
    message = check_overrides(overrides, conf_dir) if overrides else None
    if message:
        print(message, file=sys.stderr)
        sys.exit(2)
    return argv


def run_job(cfg: DictConfig) -> float | None:
    """Run one job; a MemarenaError ends it with its message (and exit code 2 outside multirun)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from memarena.pipeline import run

    hydra = HydraConfig.get() if HydraConfig.initialized() else None
    choices = dict(hydra.runtime.choices) if hydra else {}
    overrides = list(hydra.overrides.task) if hydra else []
    try:
        metrics = run(cfg, choices, overrides)
    except MemarenaError as exc:
        text = str(exc)
        log.error(text if text.startswith("memarena:") else f"memarena: {text}")
        if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
            return None
        sys.exit(2)
    log.info(
        "success_rate=%.3f progress_rate=%.3f n_episodes=%d",
        metrics["success_rate"],
        metrics["progress_rate"],
        metrics["n_episodes"],
    )
    return float(metrics["success_rate"])
