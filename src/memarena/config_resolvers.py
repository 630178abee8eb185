"""OmegaConf resolvers used by ``conf/`` (registered on import; run.py, the config check and
the tests import this module before any config is composed or resolved).

- ``${memarena.data_name:<base>,<stand_in>,<data>}``: ``<base>`` when ``<data>`` (a path to the
  benchmark's official data) is set, else ``<base>_<stand_in>``. An env whose official data is
  a download names its runs after the data they ran on, so results of the embedded stand-in
  (``pddl_generated``, ``alfworld_suite``) never sit beside the paper's numbers as if they
  were the benchmark's.
"""

from __future__ import annotations

from omegaconf import OmegaConf


def data_name(base: str, stand_in: str, data: object = None) -> str:
    """``base`` when ``data`` is set, else ``<base>_<stand_in>``."""
    return str(base) if data not in (None, "", "null", "None") else f"{base}_{stand_in}"


def register() -> None:
    OmegaConf.register_new_resolver("memarena.data_name", data_name, replace=True)


register()
