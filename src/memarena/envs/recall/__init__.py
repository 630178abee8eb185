"""Recall: a generated sanity benchmark where memory is decisive (issue 52).

Each domain (a kind of device: ``vault``, ``terminal``, ``shrine``) has ``families`` devices,
each with a secret code of ``code_length`` actions drawn from a seeded generator. A task is
"open the device": at every stage the agent picks one of ``options`` offered actions; the right
one advances the device, a wrong one locks it (failure). **Training tasks** show the code on a
note at every stage, so any agent that copies from its prompt succeeds and its trajectory holds
the code. **Test tasks** meet the same devices with no note, in another place, with a
paraphrased goal: without memory the agent can only guess (chance ``(1/options) **
code_length``, written as ``chance_success`` in metrics.json); with a faithful memory of that
device's training episode the next action can be copied from the prompt. Everything is
generated from ``seed`` (names, codes, option order); nothing is downloaded.

Difficulty knobs: ``options`` (distractors per step), ``distractors: code`` (distractors drawn
from the codes themselves, so recalling the wrong stage or the wrong device is punished),
``families`` and ``domains`` (how many devices a retrieval must tell apart), ``code_length``.
Cross-domain: with ``protocol.domain_memories: per_domain`` (MemCo's protocol) each domain's
agent is evaluated on every domain's test tasks, so a device of another domain can only be
recalled through a global memory.

What it measures: whether a method stores what happened in a training episode, retrieves the
episode of the same device for a test task worded differently, and shows it in a form the
agent's model can act on (the end-to-end plumbing of memory, with an effect on success).

What it does not measure: generalisation, abstraction or reasoning (the codes are arbitrary:
nothing transfers between devices), learning from failure (test devices were all seen with
their code), long horizons or noisy feedback. The device's name is kept verbatim between
training and test, so retrieval by name suffices; a method that only keeps abstract insights
without the concrete actions cannot succeed here, by design. It is a sanity check, not a paper
benchmark: its numbers sit beside no paper's.
"""

from memarena.envs.recall.env import RecallEnv
from memarena.envs.recall.episode import RecallEpisode

__all__ = ["RecallEnv", "RecallEpisode"]
