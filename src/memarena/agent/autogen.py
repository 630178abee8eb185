"""The acting agent of G-Memory's and MemCo's released code (``protocol.agent_loop``).

G-Memory (bingreeky/GMemory, ``tasks/mas_workflow/autogen/autogen.py``, ``format.py``) runs
every method of its tables, and MemCo's code (SYannL/nvdamas, a fork of it) every method of
MemCo's, through one AutoGen-style loop. memarena rebuilds that loop here, in its own words:

- **Two messages per step**, rebuilt each time: a system message (a short solver preamble, then
  the env's instructions) and one user message. The user message holds sections in the
  released order: the env's worked examples ("reference cases"), the memory's past episodes
  ("your own past successes"), the memory's insights, an env-specific block on how to use
  intermediate findings (MemCo's fork only) and "your turn", which carries the task and the
  whole trajectory so far as ``>action`` / observation lines (no window, thoughts included).
  G-Memory prints every section, empty ones with their heading only; MemCo's fork leaves empty
  ones out (:class:`Layout`).
- **The stuck-solver helper.** When the solver's action equals each of the last two executed
  actions (three in a row, exact text, whatever the env answered; thoughts included), the turn
  goes to a second agent ("ground truth" in the code) with its own preamble telling it that the
  solver is stuck and that its approach is wrong. It sees the same user message (memory
  included) and is not told which action repeated; its action is executed in place of the
  solver's, on the same step (no extra step), and goes into the action history, so a helper
  that repeats can fire again next step. The trajectory the prompt shows does not mark it;
  memarena's records do (``Step.agent = "helper"``, ``Outcome.helper_turns``).
- **MemCo's meta-check** (nvdamas' ``autogen.py``, only for a gpt-4o-mini model on ALFWorld):
  after every 5th step of an episode that is not over, the solver is sent the step's prompt
  plus a request for one ``think:`` line (what is done, what is missing, what to do next) and
  up to 20 admissible commands. A reply that starts with "think" joins the trajectory as a
  step answered ``OK.`` (``Step.agent = "meta_check"``): it is not sent to the env, uses no
  step of the budget and does not enter the stuck check.

Where memarena's rendering still differs from the released one (memory slot headings are the
methods' own; on ScienceWorld and FEVER the valid actions are listed, where the released
ScienceWorld answers a "check valid actions" command instead), the notebooks' "How these runs
follow the released code" sections say so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memarena.agent.prompts import MemorySpan, _join, _Part
from memarena.core import EnvPrompt, MemoryContext, Message, Observation, Step, Task

AGENT_LOOPS = ("memarena", "gmemory_autogen", "memco_autogen")
HELPER = "helper"  # Step.agent of a helper turn
META_CHECK = "meta_check"  # Step.agent of MemCo's meta-check thought

SOLVER_PREAMBLE = "You are an agent built to work out and solve problems."
HELPER_PREAMBLE = (
    "You back up a solver agent. You are called because the solver has given the same wrong "
    "output again and again: it is caught in a loop, repeating one answer or one approach. "
    "Read the input with care and give the right answer, or guidance that gets the solver out "
    "of the loop.\nImportant: do not take the approach of that earlier output. It came from a "
    "solver with a mistaken belief, and it is certainly wrong."
)

EXAMPLES_HEADING = (
    "## Solved examples (reference cases)\n"
    "These examples show similar tasks carried out successfully. Use them as a reference."
)
PAST_HEADING = (
    "## Your own past successes (how they were carried out)\n"
    "These are runs you completed successfully before. Study how they proceeded step by step, "
    "in particular how they got past obstacles."
)
INSIGHTS_HEADING = (
    "## Key insights from related tasks\n"
    "These insights were drawn from similar tasks; draw on them where they apply."
)
TURN_HEADING = (
    "## Your turn: act now!\n"
    "Take the examples and insights above as your basis, and work on the following task:"
)
HOW_TO_USE_HEADING = "## How to use your intermediate findings"
# MemCo's fork picks the block by the env's name (format.py); ALFWorld falls to the generic one
HOW_TO_USE = {
    "fever": (
        "- Read the memory as advice on where to find evidence, never as a hint about the "
        "label.\n- Start with a focused Search[...] built from the claim, then Lookup[...] the "
        "entities that matter.\n- Finish with SUPPORTS only when the evidence states the claim, "
        "with REFUTES only when it clearly contradicts it, and otherwise with NOT ENOUGH INFO.\n"
        "- When a lookup finds nothing, rephrase it instead of repeating it."
    ),
    "pddl": (
        "- Read the memory as planning advice about predicates, operators and how far the goal "
        "has come.\n- Prefer valid actions that make an unmet goal literal true.\n- Do not copy "
        "object names or actions that this problem does not offer.\n- When an action fails or "
        "changes nothing, pick a different valid operator."
    ),
    "scienceworld": (
        "- The memory hints at a procedure; it is not a source of commands: take your command "
        "from the valid actions.\n- Prefer actions that raise the score (go somewhere, open, "
        "inspect or measure, then focus, move or place).\n- Do not copy object names from old "
        "tasks.\n- When the simulator asks for a number, answer with exactly one of the listed "
        "numbers.\n- When an action fails, choose a different one."
    ),
    "default": (
        "- Revise what you believe about the scene from each observation.\n- Prefer patterns "
        "that carry over (such as opening a closed receptacle before putting something in it) "
        'to exact locations.\n- When an action answers "Nothing happens.", do not repeat it.\n'
        "- Take a plausible next step, then read the new observation again."
    ),
}
META_CHECK_REQUEST = (
    "Meta-check (this uses no step in the environment):\n"
    "Write EXACTLY ONE line that begins with `think:` and says\n"
    "- what has been done already,\n"
    "- what is still missing,\n"
    "- and which concrete action should come next.\n"
    "Be brief. Do NOT write an environment action now.\n"
    "Admissible actions (to choose your next step from):"
)
META_CHECK_EVERY = 5
META_CHECK_ACTIONS = 20
META_CHECK_MODEL = "gpt-4o-mini"

# envs whose released prompt never lists the valid actions: the agent asks for them with
# "check valid actions" (PDDL) or goes without (ALFWorld). Elsewhere memarena lists them, as its
# ScienceWorld has no such meta-action (the released one has)
UNLISTED_ACTIONS = frozenset({"pddl", "alfworld"})
# memory slots shown in the insights section; every other slot is a past episode
INSIGHT_SLOTS = frozenset(
    {"insights", "amem_insights", "lessons", "memskill_hint", "memco", "planner_notes"}
)


@dataclass(frozen=True)
class Layout:
    """What separates G-Memory's release from MemCo's fork."""

    empty_sections: bool  # print a section whose content is empty (its heading only)
    how_to_use: bool  # the env-specific block on intermediate findings
    meta_check: bool  # the gpt-4o-mini ALFWorld think: meta-check


LAYOUTS = {
    "gmemory_autogen": Layout(empty_sections=True, how_to_use=False, meta_check=False),
    "memco_autogen": Layout(empty_sections=False, how_to_use=True, meta_check=True),
}


@dataclass(frozen=True)
class HistoryView:
    """How the trajectory is rendered in "your turn": ``keep`` last steps (None: all), each
    observation whitespace-collapsed and cut to ``observation_chars`` when that is set (MemCo's
    ScienceWorld compaction: 6 and 520)."""

    keep: int | None = None
    observation_chars: int | None = None


def solver_stuck(executed: Sequence[str], action: str) -> bool:
    """The released trigger: ``action`` equals each of the last two executed actions."""
    return len(executed) >= 2 and action == executed[-1] and action == executed[-2]


def executed_actions(steps: Sequence[Step]) -> list[str]:
    """The actions sent to the env (meta-check thoughts never were)."""
    return [s.action for s in steps if s.agent != META_CHECK]


def env_steps(steps: Sequence[Step]) -> int:
    """Steps that used the budget (a meta-check thought uses none)."""
    return sum(s.agent != META_CHECK for s in steps)


def trajectory_text(initial: str, steps: Sequence[Step], view: HistoryView = HistoryView()) -> str:
    """The task's initial observation, then ``>action`` / observation lines ending in ``>``
    (the released ``summarize``); with a cut view, a line naming the steps left out."""
    shown = list(steps)
    omitted = 0
    if view.keep is not None and len(shown) > view.keep:
        omitted = len(shown) - view.keep
        shown = shown[omitted:] if view.keep > 0 else []
    lines = []
    if omitted:
        lines.append(f"[... {omitted} earlier steps left out ...]")
    for step in shown:
        observation = step.observation
        if view.observation_chars is not None:
            observation = " ".join(observation.split())
            if len(observation) > view.observation_chars:
                observation = observation[: view.observation_chars].rstrip() + "..."
        lines.append(f"{step.action}\n{observation}\n>")
    if view.observation_chars is None:  # the released summarize: steps run on
        note = f"{lines.pop(0)}\n" if omitted else ""
        return initial + "\n\n>" + note + "".join(lines)
    return initial + "\n\n>" + "\n".join(lines)  # MemCo's compaction: one step a line


def how_to_use(family: str) -> str:
    """MemCo's block for the env family (``pddl``, ``fever``, ``scienceworld``; else the
    generic one ALFWorld gets)."""
    return HOW_TO_USE.get(family, HOW_TO_USE["default"])


def build_autogen(
    prompt: EnvPrompt,
    task: Task,
    observation: Observation,
    history: Sequence[Step],
    memory: MemoryContext,
    *,
    layout: Layout,
    family: str,
    initial_observation: str,
    examples: int | str | None,
    show_actions: bool,
    helper: bool = False,
    view: HistoryView = HistoryView(),
) -> tuple[list[Message], list[MemorySpan]]:
    """The released loop's two messages for one step (the solver's, or with ``helper`` the
    helper's: the same user message under the helper's preamble) and where the memory sits."""
    released = prompt.released or prompt
    parts: list[_Part] = []
    shots = released.examples(examples)
    if shots or layout.empty_sections:
        parts.append((None, EXAMPLES_HEADING + ("\n" + "\n".join(shots) if shots else "")))
    slots = [(name, text) for name, text in memory.slots.items() if text]
    for heading, wanted in ((PAST_HEADING, False), (INSIGHTS_HEADING, True)):
        mine = [(name, text) for name, text in slots if (name in INSIGHT_SLOTS) == wanted]
        if not mine and not layout.empty_sections:
            continue
        parts.append((None, heading))
        parts.extend(mine)
    if layout.how_to_use:
        parts.append((None, f"{HOW_TO_USE_HEADING}\n{how_to_use(family)}"))
    task_text = f"Your task: {task.goal}"
    if initial_observation.strip() != task.goal.strip():
        task_text += f"\n{initial_observation}"
    turn = f"{TURN_HEADING}\n{trajectory_text(task_text, history, view)}"
    if show_actions and observation.admissible_actions and family not in UNLISTED_ACTIONS:
        turn += "\nValid actions: " + "; ".join(observation.admissible_actions)
    parts.append((None, turn))
    user, spans = _join_sections(parts)
    preamble = HELPER_PREAMBLE if helper else SOLVER_PREAMBLE
    messages: list[Message] = [
        {"role": "system", "content": f"{preamble}\n{released.system}"},
        {"role": "user", "content": user},
    ]
    return messages, [MemorySpan(1, slot, a, b) for slot, a, b in spans]


def _join_sections(parts: list[_Part]) -> tuple[str, list[tuple[str, int, int]]]:
    """Sections separated by a ``---`` rule; memory slots within a section by blank lines."""
    groups: list[list[_Part]] = []
    for slot, text in parts:
        if slot is None or not groups:
            groups.append([(slot, text)])
        else:
            groups[-1].append((slot, text))
    out, spans, pos = [], [], 0
    for k, group in enumerate(groups):
        if k:
            pos += len(_RULE)
        text, inner = _join(group)
        spans.extend((slot, a + pos, b + pos) for slot, a, b in inner)
        out.append(text)
        pos += len(text)
    return _RULE.join(out), spans


_RULE = "\n---\n\n"


def meta_check_due(model: str, family: str, steps: int, done: bool) -> bool:
    """MemCo's gate: a gpt-4o-mini model, ALFWorld, after every 5th step, the episode on."""
    return (
        META_CHECK_MODEL in model.lower()
        and family == "alfworld"
        and steps > 0
        and steps % META_CHECK_EVERY == 0
        and not done
    )


def meta_check_messages(
    messages: Sequence[Message], admissible: Sequence[str] | None
) -> list[Message]:
    """The step's prompt with the meta-check request (and up to 20 admissible commands)
    appended to its user message."""
    listed = [f"- {a}" for a in list(admissible or [])[:META_CHECK_ACTIONS]] or ["- (unavailable)"]
    request = META_CHECK_REQUEST + "\n" + "\n".join(listed)
    out = [dict(m) for m in messages]
    out[-1]["content"] = f"{out[-1]['content']}\n\n{request}"
    return out


_THINK = re.compile(r"^\s*think", re.IGNORECASE)


def meta_check_thought(reply: str) -> str | None:
    """The reply's first line when it starts with "think" (kept), else None (only logged)."""
    line = (reply or "").strip().split("\n", 1)[0].strip()
    return line if _THINK.match(line) else None
