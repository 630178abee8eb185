"""memarena's wording around LangMem (written for agent trajectories from LangMem's episodic-
memory guide, not copied from the package): the manager's instructions, the trajectory as a
conversation, and the slot header. LangMem's own prompts (the memory-subroutine framing, the
session tags, trustcall's patch instructions) are the package's and run as they are."""

from __future__ import annotations

# the memory manager's instructions (``instructions: episodic``); ``instructions: package``
# leaves LangMem's default instructions in place
EPISODIC_INSTRUCTIONS = (
    "You keep the episodic memory of an agent that carries out tasks in an environment. From "
    "the session below, record the episode as an Episode the agent can learn from when a "
    "similar task comes, or refine an existing episode the session adds to. Write as the "
    "agent, in the first person and with hindsight: the situation it faced, how it reasoned, "
    "what it did (the actions that mattered, as it wrote them) and how it ended, with what "
    "worked and what to do differently. Keep each episode self-contained and concrete."
)

# the trajectory as the conversation the manager reads
TASK_TURN = "Task: {goal}\n\n{initial}"
OUTCOME_TURN = "Task: {goal}\nOutcome: {status} after {steps} steps."

# the slot retrieved episodes are shown in
HEADER = "Episodes from your memory of similar tasks:"
