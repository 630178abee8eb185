"""The cyclic garbage collector paused while a large memory is built, saved or loaded.

Building a memory's index, serialising a snapshot or loading one allocates 10^5-10^6 small
objects (records, tuples, dicts; none in a reference cycle) over a heap that already holds the
whole memory. Every collection those allocations trigger walks that heap, which made such
operations 2-3x slower at 10k episodes (MemCo: a snapshot load 10.9 s -> 3.5 s, a global rebuild
about half its time). Reference counting still frees everything; cycles made meanwhile are
collected after the pause.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """``gc`` disabled inside the block, and re-enabled after it if it was enabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
