"""HotpotQA: multi-hop questions answered by ReAct Wikipedia search."""

from memarena.envs.hotpotqa.env import HotpotQAEnv

__all__ = ["HotpotQAEnv"]
