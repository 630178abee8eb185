"""BFCL v3 multi-turn (``bfcl-eval==2025.8.6``, the last release with v3 data) on the package's
own executable API classes and multi-turn checker.

``BfclEnv`` is the Env (``conf/env/bfcl.yaml``); ``BfclEpisode`` plays one task turn by turn;
``data`` reads the package's data files.
"""

from memarena.envs.bfcl.data import CATEGORIES
from memarena.envs.bfcl.env import BfclEnv
from memarena.envs.bfcl.episode import NEXT, BfclEpisode, parse_calls, parse_reply

__all__ = ["CATEGORIES", "NEXT", "BfclEnv", "BfclEpisode", "parse_calls", "parse_reply"]
