"""Official variation splits and task descriptions, read from the simulator once.

Both need a JVM (~4 s for the 30 splits, ~30 ms per description), so they are kept per process
and, with a ``cache_dir``, in ``<cache_dir>/catalog-<scienceworld version>.json`` for later runs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from memarena.envs.scienceworld.simulator import SimulatorPool

log = logging.getLogger(__name__)
# Shared by every Catalog of this process (tests and multi-env runs read the simulator once).
_VARIATIONS: dict[str, dict[str, list[int]]] = {}
_DESCRIPTIONS: dict[str, str] = {}


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("scienceworld")
    except Exception:
        return "unknown"


class Catalog:
    def __init__(self, pool: SimulatorPool, cache_dir: str | None) -> None:
        self._pool = pool
        self.path = (
            Path(cache_dir).expanduser() / f"catalog-{_version()}.json" if cache_dir else None
        )
        self.variations = _VARIATIONS
        self.descriptions = _DESCRIPTIONS
        self._on_disk: set[str] = set()  # keys the cache file holds
        if self.path is not None and self.path.is_file():
            try:
                data = json.loads(self.path.read_text())
                self.variations.update(data.get("variations", {}))
                self.descriptions.update(data.get("descriptions", {}))
                self._on_disk = {*data.get("variations", {}), *data.get("descriptions", {})}
            except (OSError, ValueError, AttributeError) as exc:
                log.warning("ignoring unreadable ScienceWorld catalog %s (%s)", self.path, exc)

    @staticmethod
    def key(task_name: str, variation: int, simplification: str) -> str:
        return f"{task_name}|{variation}|{simplification}"

    def ensure_variations(self, task_names: Iterable[str]) -> None:
        names = list(task_names)
        missing = [t for t in names if t not in self.variations]
        if missing:
            sim = self._pool.acquire()
            try:
                for t in missing:
                    self.variations[t] = sim.variations(t)
            finally:
                self._pool.release(sim)
        self._save_if_new(names)

    def ensure_descriptions(self, refs: Iterable[tuple[str, int]], simplification: str) -> None:
        keys = {self.key(*r, simplification): r for r in refs}
        missing = [r for k, r in keys.items() if k not in self.descriptions]
        if missing:
            log.info("reading %d ScienceWorld task descriptions from the simulator", len(missing))
            sim = self._pool.acquire()
            try:
                for name, var in missing:
                    sim.load(name, var, simplification, False)
                    text = sim.task_description().strip()
                    text = text.removeprefix("Task Description:").strip()
                    self.descriptions[self.key(name, var, simplification)] = text
            finally:
                self._pool.release(sim)
        self._save_if_new(keys)

    def _save_if_new(self, keys: Iterable[str]) -> None:
        if self.path is None or set(keys) <= self._on_disk:
            return
        self._on_disk = {*self.variations, *self.descriptions}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            data = {"variations": self.variations, "descriptions": self.descriptions}
            tmp.write_text(json.dumps(data, sort_keys=True))
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("could not write the ScienceWorld catalog %s (%s)", self.path, exc)
