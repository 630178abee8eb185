"""AgentBoard-style PDDL benchmark: gripper, blocksworld, barman and tyreworld.

``PDDLEnv`` is the Env (``conf/env/pddl.yaml``); ``PDDLEpisode`` is one episode behind the text
interface. Domain files live in ``domains/``; problems come from seeded generators or an
external AgentBoard-format folder (``env.problems_dir``).
"""

from memarena.envs.pddl.env import PDDLEnv
from memarena.envs.pddl.episode import PDDLEpisode
from memarena.envs.pddl.specs import CHECK_VALID_ACTIONS, INVALID_ACTION_MESSAGE, LOOK_AROUND

__all__ = [
    "CHECK_VALID_ACTIONS",
    "INVALID_ACTION_MESSAGE",
    "LOOK_AROUND",
    "PDDLEnv",
    "PDDLEpisode",
]
