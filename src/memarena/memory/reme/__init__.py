"""ReMe (Remember Me, Refine Me; reme.txt): distil, reuse and refine procedural experience.

``ReMe`` is the method (``conf/method/reme.yaml``); ``experience`` holds the experience
record and pool, ``summarizer`` the summarizer's requests and parsing, ``prompts`` the texts.
"""

from memarena.memory.reme.experience import RETRIEVAL_KEYS, Experience, ExperiencePool
from memarena.memory.reme.method import ReMe

__all__ = ["RETRIEVAL_KEYS", "Experience", "ExperiencePool", "ReMe"]
