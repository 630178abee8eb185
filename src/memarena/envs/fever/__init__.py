"""FEVER: claims verified as SUPPORTS / REFUTES / NOT ENOUGH INFO by ReAct Wikipedia search."""

from memarena.envs.fever.env import FeverEnv

__all__ = ["FeverEnv"]
