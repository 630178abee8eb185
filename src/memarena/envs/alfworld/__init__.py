"""ALFWorld on the real TextWorld engine: official data or the embedded household suite.

``AlfWorldEnv`` is the Env (``conf/env/alfworld.yaml``); ``AlfWorldEpisode`` one game. The
engine (``alfworld``/``textworld``) is imported only when a game is generated or played.
"""

from memarena.envs.alfworld.env import AlfWorldEnv
from memarena.envs.alfworld.episode import AlfWorldEpisode

__all__ = ["AlfWorldEnv", "AlfWorldEpisode"]
