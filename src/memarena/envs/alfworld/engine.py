"""Thin access to the ALFWorld/TextWorld engine (imported lazily: alfworld is optional).

``start_game`` opens one game folder's ``game.tw-pddl`` on TextWorld's PDDL backend (in-process,
Fast Downward through ctypes) with ALFWorld's wrappers: name demangling (``apple 1``), the game
file in the infos, and the handcoded expert, whose next action arrives with every state as
``extra.expert_plan``.

TextWorld re-parses the same text-generation templates and logic queries with its TatSu grammar on
every step (and the shared ALFRED grammar on every game load), and translates a game's PDDL to
Fast Downward's SAS form four times per episode (twice at load, twice again at reset, the same
two translations). ``start_game`` remembers both (:func:`memoized_parsers`: a result is kept
once and every caller gets a deep copy, so no caller sees another's changes; translations of
the last 64 games), which cuts an episode's engine time by more than half, and a game played
again in the same process (a sweep's jobs on one suite) skips its translation. The
observations are the same with and without it (``tests/envs/test_alfworld_env.py``).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError

INSTALL_HINT = (
    "memarena: env=alfworld needs the ALFWorld engine: pip install 'alfworld==0.4.2' "
    "(it pulls textworld[pddl]==1.7.0; torch is not needed)."
)


def alfworld_data_dir() -> Path:
    """The wheel's data folder (alfred.pddl, alfred.twl2), found without importing alfworld.info
    (which creates ~/.cache/alfworld as a side effect)."""
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(INSTALL_HINT)
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def load_logic() -> tuple[str, str]:
    """(pddl_domain, grammar) text shipped in the alfworld wheel."""
    d = alfworld_data_dir()
    return (d / "alfred.pddl").read_text(), (d / "alfred.twl2").read_text()


@contextlib.contextmanager
def _quiet_alfworld_import() -> Iterator[None]:
    """Import alfworld without its side effect on ``ALFWORLD_DATA``.

    ``alfworld/__init__`` sets ``os.environ["ALFWORLD_DATA"]`` to ``~/.cache/alfworld`` when it
    is unset; memarena reads that variable for ``env.data_path``, so a later run in the same
    process would look for official data there. The variable is put back as it was.
    """
    before = os.environ.get("ALFWORLD_DATA")
    try:
        yield
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc
    finally:
        if before is None:
            os.environ.pop("ALFWORLD_DATA", None)
        else:
            os.environ["ALFWORLD_DATA"] = before


def goal_library() -> dict[str, Any]:
    with _quiet_alfworld_import():
        from alfworld.gen.goal_library import gdict
    return gdict


def alfred_constants() -> Any:
    with _quiet_alfworld_import():
        from alfworld.gen import constants
    return constants


# (module, function, results kept): TextWorld's three TatSu front ends, each a module-level
# ``_parse_and_convert(text, rule_name=...)`` over a finite set of templates, and Fast Downward's
# ``pddl2sas(domain, problem, verbose=, optimize=)`` (one game's translations per entry)
_REMEMBERED = (
    ("textworld.envs.pddl.textgen", "_parse_and_convert", None),
    ("textworld.envs.pddl.logic", "_parse_and_convert", None),
    ("textworld.logic", "_parse_and_convert", None),
    ("fast_downward", "pddl2sas", 128),
)
_PLAIN: dict[tuple[str, str], Any] = {}


def memoized_parsers() -> None:
    """Make TextWorld's parse functions and Fast Downward's PDDL-to-SAS translation remember
    their results (idempotent).

    Each is a pure function of its texts and options; the result (a fresh object tree each time)
    is kept once and every caller gets ``copy.deepcopy`` of it, since TextWorld sets
    per-derivation context on the symbols it gets back.
    """
    import importlib

    for module_name, function, keep in _REMEMBERED:
        if (module_name, function) in _PLAIN:
            continue
        module = importlib.import_module(module_name)
        plain = getattr(module, function)
        _PLAIN[module_name, function] = plain
        setattr(module, function, _remembering(plain, keep))


def _remembering(function: Any, keep: int | None) -> Any:
    results: dict[tuple, Any] = {}

    def call_once(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        if key not in results:
            if keep is not None and len(results) >= keep:
                results.pop(next(iter(results)))  # the oldest
            results[key] = function(*args, **kwargs)
        return copy.deepcopy(results[key])

    return call_once


@contextlib.contextmanager
def plain_parsers() -> Iterator[None]:
    """TextWorld's and Fast Downward's own functions for the duration (tests compare)."""
    import importlib

    memoized_parsers()
    modules = {m: importlib.import_module(m) for m, _, _ in _REMEMBERED}
    remembered = {(m, f): getattr(modules[m], f) for m, f, _ in _REMEMBERED}
    for (module_name, function), plain in _PLAIN.items():
        setattr(modules[module_name], function, plain)
    try:
        yield
    finally:
        for (module_name, function), value in remembered.items():
            setattr(modules[module_name], function, value)


def start_game(game_file: str | Path, expert: bool = True) -> Any:
    """A TextWorld environment (not yet reset) playing ``game_file``."""
    with _quiet_alfworld_import():
        import textworld

        memoized_parsers()
        from alfworld.agents.environment.alfred_tw_env import (
            AlfredDemangler,
            AlfredExpert,
            AlfredInfos,
        )
    infos = textworld.EnvInfos(
        won=True, admissible_commands=True, facts=True, feedback=True, extras=["gamefile"]
    )
    wrappers: list[Any] = [AlfredDemangler(), AlfredInfos]
    if expert:
        wrappers.append(AlfredExpert(expert_type="handcoded"))
        infos.extras.append("expert_plan")
    return textworld.start(str(game_file), infos, wrappers=wrappers)


@contextlib.contextmanager
def seeded_global_random(state: Any) -> Iterator[list[Any]]:
    """Run engine code (the expert draws from the global ``random``) on a private state.

    Yields a one-item list holding the private state; it is updated on exit and the caller's
    global state is restored, so episodes replay exactly whatever else runs in the process.
    """
    saved = random.getstate()
    box = [state]
    random.setstate(state)
    try:
        yield box
    finally:
        box[0] = random.getstate()
        random.setstate(saved)


def private_random_state(seed: str) -> Any:
    return random.Random(seed).getstate()
