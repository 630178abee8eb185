"""How ReMe's BFCL agent prompt (``protocol.prompt_layout``) differs between the released agent's
structure and memarena's own layout, for notebooks/reme.ipynb.

``reme_bfcl`` is the structure of ReMe's released BFCL agent (agentscope-ai/ReMe 26cb5ca6,
benchmark/bfcl/bfcl_agent.py); ReMe's BFCL experiment files use it
(``conf/experiment/base/reme_bfcl.yaml``). ``memarena`` is the layout every other experiment
uses, one key away (``protocol.prompt_layout=memarena``). The texts are
:mod:`memarena.agent.prompts` (``TASK_LABEL``, ``MEMORY_HEADER``) and
:mod:`memarena.envs.bfcl.prompts` (memarena's system message)."""

from __future__ import annotations

import pandas as pd

from memarena.agent.prompts import MEMORY_HEADER, TASK_LABEL
from memarena.memory.reme import prompts as reme_prompts

SOURCE = "agentscope-ai/ReMe 26cb5ca6, benchmark/bfcl/bfcl_agent.py"

# (aspect, reme_bfcl: the released agent's structure, memarena's layout)
_ROWS: tuple[tuple[str, str, str], ...] = (
    (
        "system message",
        "none: the functions travel only as the request's tools",
        "memarena's BFCL instructions (call functions step by step; reply NEXT to hand the "
        "turn back); with native tools the functions are not listed in it",
    ),
    (
        "first user message, memory shown",
        f"'{TASK_LABEL}', the raw request, a blank line, one header line "
        f"('{MEMORY_HEADER}'), then the items",
        f"the memory slot with the method's own header ('{reme_prompts.HEADER}'), then "
        "'Your task: User: <request>', then the reply format line",
    ),
    (
        "first user message, nothing shown",
        "the raw request alone (also every row of method=none)",
        "'Your task: User: <request>' and the reply format line",
    ),
    (
        "experience items",
        "'Experience i :' (a space before the colon), ' When to use:', ' Content:'; blocks "
        "separated by a blank line",
        "'Experience i:', ' When to use:', ' Content:'; blocks separated by a blank line",
    ),
    (
        "a retry's lessons",
        "in the experiences' place, under the same header and in the same blocks",
        f"under their own header ('{reme_prompts.LESSONS_HEADER}')",
    ),
    (
        "task text and retrieval query",
        "the entry's first request as it stands (also what acquisition stores as an "
        "experience's task query)",
        "'User: ' and the request (memarena's BFCL goal)",
    ),
    (
        "later user turns",
        "the entry's messages as they stand",
        "'User: ' and the message",
    ),
    (
        "ending a turn",
        "a reply without calls ends the turn (BFCL's multi-turn loop; memarena's env does the "
        "same, env.text_ends_turn); nothing in the prompt says so",
        "the prompt asks for NEXT; a reply without calls also ends the turn",
    ),
)


def layout_differences() -> pd.DataFrame:
    """One row per aspect of the agent's prompt: the released agent's structure
    (``reme_bfcl``) beside memarena's layout (``memarena``)."""
    return pd.DataFrame(
        [{"aspect": a, "reme_bfcl (released)": r, "memarena": m} for a, r, m in _ROWS]
    )


def layout_differences_markdown() -> str:
    """:func:`layout_differences` as a markdown table with its source line."""
    lines = [
        "| aspect | reme_bfcl (released) | memarena |",
        "| --- | --- | --- |",
        *(f"| {a} | {r} | {m} |" for a, r, m in _ROWS),
        "",
        f"reme_bfcl follows {SOURCE}; ReMe's BFCL experiment files set it "
        "(protocol.prompt_layout), memarena's layout is protocol.prompt_layout=memarena.",
    ]
    return "\n".join(lines)
