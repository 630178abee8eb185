"""OmegaConf resolvers used by ``conf/`` (registered on import; run.py, the config check and
the tests import this module before any config is composed or resolved).

- ``${memarena.data_name:<base>,<stand_in>,<data>}``: ``<base>`` when ``<data>`` (a path to the
  benchmark's official data) is set, else ``<base>_<stand_in>``. An env whose official data is
  a download names its runs after the data they ran on, so results of the embedded stand-in
  (``pddl_generated``, ``alfworld_suite``) never sit beside the paper's numbers as if they
  were the benchmark's.
- ``${memarena.snake:<name>}``: ``<name>`` lower-cased with every run of other characters than
  letters and digits as one ``_`` (``Qwen3-8B`` -> ``qwen3_8b``): a model name as the file names
  of released memories spell it (ReMe's ``bfcl_qwen3_8b.jsonl``).
"""

from __future__ import annotations

import re

from omegaconf import OmegaConf


def data_name(base: str, stand_in: str, data: object = None) -> str:
    """``base`` when ``data`` is set, else ``<base>_<stand_in>``."""
    return str(base) if data not in (None, "", "null", "None") else f"{base}_{stand_in}"


def snake(name: object) -> str:
    """``name`` lower-cased, each run of non-alphanumerics as one ``_``, none at the ends."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_")


def register() -> None:
    OmegaConf.register_new_resolver("memarena.data_name", data_name, replace=True)
    OmegaConf.register_new_resolver("memarena.snake", snake, replace=True)


register()
