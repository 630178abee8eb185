"""A sweep job's config as its process composes it, for the checks made before a sweep starts
(:func:`memarena.config_check.duplicate_cells`, :mod:`memarena.launch.preflight`): composed
once per job less its seed and kept for the process."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

from hydra import compose
from omegaconf import DictConfig, OmegaConf


def seed_apart(job: Sequence[str]) -> tuple[tuple[str, ...], str | None]:
    """A sweep job's overrides less its seed, and the seed it gives (the last; None)."""
    seeds = [o.split("=", 1)[1] for o in job if o.lstrip("+").split("=", 1)[0] == "seed"]
    rest = tuple(o for o in job if o.lstrip("+").split("=", 1)[0] != "seed")
    return rest, (seeds[-1] if seeds else None)


def compose_job(job: Sequence[str], conf_dir: Path) -> DictConfig:
    """A sweep job's config as its process composes it (the ``hydra`` node included), for the
    checks made before a sweep starts: one composition per job less its seed, kept for the
    process, since :func:`memarena.config_check.duplicate_cells` and the pre-flight
    (:func:`memarena.launch.preflight.sweep_report`) compose the same jobs at ~0.3 s each (the
    234-job cross-paper sweep has 78). Call inside ``initialize_config_dir(conf_dir)``; the
    config returned is shared: merge it to change it."""
    rest, seed = seed_apart(job)
    cfg = _composed(str(Path(conf_dir).resolve()), rest)
    return OmegaConf.merge(cfg, {"seed": int(seed)}) if seed is not None else cfg


@functools.lru_cache(maxsize=256)  # above the largest paper sweep's 78; bounds a long process
def _composed(conf_dir: str, overrides: tuple[str, ...]) -> DictConfig:
    """The composition of ``overrides`` under ``conf_dir`` (the key: a config folder is read
    once per process; edit a conf/ file and a new process sees it)."""
    return compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
