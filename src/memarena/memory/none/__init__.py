"""No memory: the agent sees only the task and its own history (the papers' "No-memory")."""

from __future__ import annotations

from memarena.memory.base import BaseMemory


class NoMemory(BaseMemory):
    name = "none"
    learns = False
