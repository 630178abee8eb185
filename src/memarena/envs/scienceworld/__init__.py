"""ScienceWorld (30 elementary-science tasks) on the real simulator (``scienceworld`` 1.2.3).

``ScienceWorldEnv`` is the Env (``conf/env/scienceworld.yaml``); ``ScienceWorldEpisode`` is one
(task, variation) episode; ``tasks.FAMILIES`` maps the 30 task names to MemCo's ten families;
``agentboard`` reads AgentBoard's ScienceWorld task list with subgoals; ``catalog`` keeps the
official variation splits and task descriptions; ``simulator`` wraps one JVM and the pool.
"""

from memarena.envs.scienceworld.env import ScienceWorldEnv
from memarena.envs.scienceworld.episode import INVALID_MESSAGE, ScienceWorldEpisode
from memarena.envs.scienceworld.simulator import SimulatorError
from memarena.envs.scienceworld.tasks import FAMILIES, TASK_NAMES

__all__ = [
    "FAMILIES",
    "INVALID_MESSAGE",
    "TASK_NAMES",
    "ScienceWorldEnv",
    "ScienceWorldEpisode",
    "SimulatorError",
]
