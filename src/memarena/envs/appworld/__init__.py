"""AppWorld (``env=appworld``): the package's environment server in its own venv, over HTTP."""

from memarena.envs.appworld.client import AppWorldClient, AppWorldServerError
from memarena.envs.appworld.env import AppWorldEnv
from memarena.envs.appworld.episode import AppWorldEpisode, extract_code
from memarena.envs.appworld.metrics import goal_completion
from memarena.envs.appworld.server import AppWorldServer, ServerPool

__all__ = [
    "AppWorldClient",
    "AppWorldEnv",
    "AppWorldEpisode",
    "AppWorldServer",
    "AppWorldServerError",
    "ServerPool",
    "extract_code",
    "goal_completion",
]
