"""The results folder of an ad-hoc run: a command without ``experiment=``.

Such a run takes the capped demo config (``conf/experiment/demo.yaml``; ``experiment=null``: the
uncapped ``adhoc``), and the run folder names only its experiment, env, method, ablation, backbone
and seed. Two ad-hoc commands that differ in any other key (``protocol.max_train_tasks=4``) would
share a folder, and the second would be refused as a resume with another configuration. So the
experiment part of an ad-hoc run's folder is derived from its other overrides:

    python run.py method=icl env=pddl backbone=scripted            -> results/demo/...
    python run.py -m method=none,icl env=pddl backbone=scripted protocol.max_train_tasks=4
                                     -> results/demo+protocol.max_train_tasks-4/...

The name keeps to letters, digits and ``_ . - +`` so that a run folder can be given back on the
command line as it is (``protocol.snapshot_from=results/demo+...``: Hydra's override grammar
takes no ``=``, ``,`` or brackets in an unquoted value): ``key=value`` is written ``key-value``,
a group override's ``/`` is ``-``, and any other character ``_``; where that loses a
character (``env.domains=[a,b]``), a hash of the overrides ends the name, so two ad-hoc
commands never share a folder.

Keys that do not change results (paths, logging, speed settings, ``protocol.max_eval_tasks``:
the keys a resume ignores, :data:`memarena.pipeline.identity.NOT_RESULT`) do not name it.

An experiment file, or ``experiment_name=...`` on the command line, names the folder itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

# override keys that never make an ad-hoc folder of their own: those named in the run folder
# already (the group choices method, env, backbone, ablation; seed; not their keys:
# env.domains=[kitchen] is a run of its own) and the name itself ...
IN_PATH = ("method", "env", "backbone", "ablation", "seed", "experiment", "experiment_name")
# ... and every key under how the run is launched; the keys that do not change results (paths,
# logging, speed, protocol.max_eval_tasks: memarena.pipeline.identity, which a resume ignores too)
NOT_RESULTS = ("launcher", "hydra")
SEP = "+"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # what a folder name given back as a value cannot hold
MAX_NAME = 120


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def names_the_run(override: str) -> bool:
    """Whether ``override`` changes an ad-hoc run's results without showing in its folder."""
    from memarena.pipeline.identity import NOT_RESULT, NOT_RESULT_LEAVES

    key = _key(override)
    if key in IN_PATH or key.split(".", 1)[0].split("/", 1)[0] in NOT_RESULTS:
        return False
    if any(key == k or key.startswith(k + ".") for k in NOT_RESULT):
        return False
    return key.rsplit(".", 1)[-1] not in NOT_RESULT_LEAVES


def is_adhoc(overrides: Sequence[str]) -> bool:
    """Whether a job with ``overrides`` (its own, the command line's) runs without an experiment
    file naming it: no ``experiment=<file>`` (``experiment=demo`` is the default) and no
    ``experiment_name=``."""
    for override in overrides:
        key, _, value = override.partition("=")
        key = key.lstrip("+")
        if key == "experiment_name":
            return False
        if key == "experiment" and value not in ("demo", "null", ""):
            return False
    return True


def adhoc_name(base: str, overrides: Sequence[str]) -> str:
    """``base`` (demo / adhoc) followed by the overrides that change the run without showing in
    its folder, sorted (the command's order does not matter): ``demo+protocol.max_train_tasks-4``.
    ``base`` alone when there are none. A name that lost a character to the safe alphabet, or
    is over :data:`MAX_NAME` characters, keeps its start and ends in a hash of the overrides."""
    kept = sorted(o.lstrip("+") for o in overrides if names_the_run(o))
    if not kept:
        return base
    parts, lossy = [], False
    for override in kept:
        raw_key, _, value = override.partition("=")
        key = raw_key.replace("/", "-")
        part = _UNSAFE.sub("_", f"{key}-{value}")
        lossy = lossy or "-" in raw_key or part != f"{key}-{value}"
        parts.append(part)
    name = SEP.join([base, *parts])
    if lossy or len(name) > MAX_NAME:
        digest = hashlib.sha1("\n".join(kept).encode()).hexdigest()[:10]
        name = f"{name[: MAX_NAME - 11]}{SEP}{digest}"
    return name
