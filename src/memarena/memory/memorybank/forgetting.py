"""MemoryBank's forgetting curve (Zhong et al., 2023, Section 2.3) and its clock.

Each memory has a strength S and the time t elapsed since it was learnt or last recalled; its
retention is ``R = exp(-t / S)`` (the Ebbinghaus curve as the paper writes it). S starts at
``initial_strength`` (1: "first mention"); a recall sets ``S <- S + 1`` and resets t to 0. A
memory whose retention falls below the threshold is forgotten.

The clock. MemoryBank's t is counted in days between conversations: the released code
(zhongwanjun/MemoryBank-SiliconFriend) documents ``forgetting_curve(t, S)`` with "t: time
elapsed since the information was learned (in days)" and takes t as the difference of two
``%Y-%m-%d`` dates (``memory_bank/memory_retrieval/forget_memory.py``,
``_get_date_difference``); every exchange of one day is stored under that day's date
(``utils/memory_utils.py``, ``save_local_memory``), so memories written the same day never
decay against each other. memarena's stream has tasks, not dates: ``tasks_per_day``
consecutive tasks make one day, task ``i`` falls on day ``i // tasks_per_day``, and t is the
number of whole days between the day of the last recall (or writing) and the day of the task
about to run (:func:`days_between`). ``tasks_per_day = 1`` is the plain task-index clock.
(That code also keeps a memory with probability R at each session start, caps S at 3
(``memory_level``), drops a memory 30 days past its last recall (``total_date``) and ships
forgetting switched off (``utils/sys_args.py``: ``enable_forget_mechanism=False``); memarena
forgets deterministically below ``forget_threshold``, with S uncapped as the paper writes it.)

The same code computes ``exp(-t / S)``, the paper's formula, which memarena implements.
G-Memory's MemoryBank baseline (bingreeky/GMemory ``mas_memory/memorybank.py``,
``MemoryForgetter``) has ``exp(-dt / 5 * scale)`` with ``scale`` never passed (1), on a clock of
steps inside one task: one unit of t there is 5 steps, which memarena's parity mode keeps as
its in-task window; it has no forgetting across tasks.
"""

from __future__ import annotations

import math


def retention(elapsed: float, strength: float) -> float:
    """``R = exp(-t / S)`` for ``t = elapsed`` >= 0 and ``S = strength`` > 0."""
    if strength <= 0:
        raise ValueError(f"memory strength must be > 0, got {strength}")
    return math.exp(-max(0.0, float(elapsed)) / float(strength))


def days_between(since: int, now: int, tasks_per_day: int) -> int:
    """Whole days from task ``since`` to task ``now`` when ``tasks_per_day`` tasks make a day
    (task ``i`` is on day ``i // tasks_per_day``); never negative."""
    if tasks_per_day < 1:
        raise ValueError(f"tasks_per_day must be >= 1, got {tasks_per_day}")
    return max(0, now // tasks_per_day - since // tasks_per_day)
