"""Config checks shared by env constructors (Hydra passes each config key as a kwarg)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from memarena.core.errors import ConfigError


def plain(value: Any) -> Any:
    """OmegaConf containers to plain Python (Hydra passes ListConfig/DictConfig)."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def check_step_budget(step_budget: Any) -> int:
    """``env.step_budget`` as an int >= 1, else a ConfigError. (Unknown keys never reach an env
    constructor: the pipeline checks every config key against the signature first.)"""
    if not isinstance(step_budget, int) or isinstance(step_budget, bool) or step_budget < 1:
        raise ConfigError(f"memarena: env.step_budget={step_budget!r} must be an int >= 1.")
    return step_budget


def check_official_data(required: bool, present: bool, env: str, how: str, stand_in: str) -> bool:
    """A paper experiment sets ``env.require_data: true``: without the benchmark's official
    data (``present`` False) the run stops here, naming what to set (``how``) and how to opt
    into the embedded stand-in, whose results go under the env name ``stand_in``. Returns
    whether the env runs on the stand-in (its ``Env.stand_in``: runs flagged ``stand_in_data``)."""
    if required and not present:
        raise ConfigError(
            f"memarena: env={env}: this run needs the official data: {how}. To run on the "
            f"embedded stand-in instead, add env.require_data=false; its results then go under "
            f"{stand_in}, never beside the paper's numbers."
        )
    return not present


def choose_names(key: str, value: Any, valid: Sequence[str], hint: str = "") -> list[str]:
    """A non-empty list of names from ``valid`` (a single string is a list of one), deduplicated
    in order; otherwise a ConfigError naming ``env.<key>`` and the valid names."""
    value = plain(value)
    if isinstance(value, str):
        value = [value]
    if not value:
        raise ConfigError(f"memarena: env.{key} is empty; choose from {list(valid)}.")
    bad = [v for v in value if v not in valid]
    if bad:
        raise ConfigError(
            f"memarena: env.{key} has unknown value {bad[0]!r}; valid: {list(valid)}{hint}."
        )
    return list(dict.fromkeys(value))
