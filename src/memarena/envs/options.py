"""Config checks shared by every env constructor (Hydra passes each config key as a kwarg)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from memarena.core.errors import ConfigError


def plain(value: Any) -> Any:
    """OmegaConf containers to plain Python (Hydra passes ListConfig/DictConfig)."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def check_common(
    env: str, unknown: Mapping[str, Any], options: Iterable[str], step_budget: Any
) -> int:
    """Reject unknown keys (naming the valid ones) and a bad step budget; return the budget."""
    if unknown:
        raise ConfigError(
            f"memarena: env.{sorted(unknown)[0]} is not an option of env={env}; valid "
            f"options: {', '.join(options)}."
        )
    if not isinstance(step_budget, int) or isinstance(step_budget, bool) or step_budget < 1:
        raise ConfigError(f"memarena: env.step_budget={step_budget!r} must be an int >= 1.")
    return step_budget


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
