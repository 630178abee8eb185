"""A resume goes on with the inputs its records were made with, or refuses naming what changed:
the memory snapshot an evaluation starts from (``protocol.snapshot_from``, pinned by its
sha256; its env checked), the embedder stored vectors came from (its whole identity), and the
code (``run_info.json``: git commit and uncommitted changes; ``protocol.allow_code_change``)."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, compose_cfg, run_py
from memarena.core import ConfigError
from memarena.memory.vectors import embedder_identity, pack, stored_matches
from memarena.results.store import SNAPSHOT_PIN, RunStore, code_change

SCRIPTED = ["env=pddl", "backbone=scripted", "logger=none", "protocol.concurrency=2"]
MEMCO = [*SCRIPTED, "method=memco", "protocol.max_eval_tasks=2"]


def _said(proc: subprocess.CompletedProcess) -> str:
    return " ".join(f"{proc.stdout}\n{proc.stderr}".split())


def _run_dir(results: Path, experiment: str) -> Path:
    (path,) = (results / experiment).rglob("episodes.jsonl")
    return path.parent


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, _said(proc)[-3000:]


# --- the snapshot an evaluation starts from -----------------------------------------------------
def test_a_resume_after_its_snapshot_was_redone_is_refused_naming_the_snapshot(tmp_path):
    acquire = [*MEMCO, "experiment_name=acq", f"paths.results_dir={tmp_path}"]
    _ok(run_py([*acquire, "protocol.max_train_tasks=4"]))
    memory = _run_dir(tmp_path, "acq") / "memory"
    first = _sha256(memory / "memory.json")
    evaluate = [*MEMCO, "experiment_name=eval", "protocol.snapshot_from=acq",
                "protocol.max_train_tasks=4", f"paths.results_dir={tmp_path}"]  # fmt: skip
    _ok(run_py(evaluate))
    run_dir = _run_dir(tmp_path, "eval")
    _ok(run_py(evaluate))  # the same snapshot: the resume goes on

    # the snapshot's run is redone (other train problems): other memory behind the same name
    _ok(run_py([*acquire, "protocol.max_train_tasks=4", "env.seed=1", "protocol.resume=false"]))
    assert _sha256(memory / "memory.json") != first
    episodes = (run_dir / "episodes.jsonl").read_text()
    refused = run_py(evaluate)
    assert refused.returncode == 2
    text = _said(refused)
    assert f"protocol.snapshot_from=acq ({memory})" in text
    assert f"sha256 {first[:12]}..." in text and "has changed since" in text
    assert "paths.results_dir" in text and "protocol.resume=false" in text
    assert (run_dir / "episodes.jsonl").read_text() == episodes
    assert json.loads((run_dir / "identity.json").read_text())[SNAPSHOT_PIN] == first
    # starting over evaluates the new snapshot
    _ok(run_py([*evaluate, "protocol.resume=false"]))
    pinned = json.loads((run_dir / "identity.json").read_text())[SNAPSHOT_PIN]
    assert pinned == _sha256(memory / "memory.json")


def test_a_snapshot_cannot_change_under_a_running_evaluation(tmp_path):
    """An evaluation holds the snapshot it starts from (a shared lock) and reads a private copy
    pinned by sha256: redoing the snapshot's run meanwhile is refused, and a snapshot changed
    behind the lock's back does not reach the evaluation's loads."""
    from memarena.pipeline.acquire import load_pinned
    from memarena.pipeline.build import build, close_parts

    acquire = [*MEMCO, "experiment_name=acq", "protocol.max_train_tasks=4",
               f"paths.results_dir={tmp_path}"]  # fmt: skip
    _ok(run_py(acquire))
    memory = _run_dir(tmp_path, "acq") / "memory"
    first = _sha256(memory / "memory.json")
    evaluate = [*MEMCO, "experiment_name=eval", "protocol.snapshot_from=acq",
                "protocol.max_train_tasks=4", f"paths.results_dir={tmp_path}",
                f"paths.llm_cache={tmp_path}/.llm_calls.sqlite"]  # fmt: skip
    parts = build(compose_cfg(evaluate))
    try:
        assert parts.snapshot_sha == first and parts.snapshot_copy != memory
        redo = run_py([*acquire, "env.seed=1", "protocol.resume=false"])
        assert redo.returncode == 2 and "is in use: a run evaluating it" in _said(redo)
        assert _sha256(memory / "memory.json") == first  # the refused redo left it alone
        loaded = []
        parts.memory.load = loaded.append  # what each run of the evaluation would load
        load_pinned(parts, parts.memory)
        (memory / "memory.json").write_text("{}")  # changed behind the lock's back
        load_pinned(parts, parts.memory)  # still the pinned copy
        assert loaded == [parts.snapshot_copy] * 2
        assert _sha256(parts.snapshot_copy / "memory.json") == first
        (parts.snapshot_copy / "memory.json").write_text("{}")  # every load checks the pin
        with pytest.raises(ConfigError, match="changed after this run pinned it"):
            load_pinned(parts, parts.memory)
    finally:
        close_parts(parts)
    assert not parts.snapshot_copy.exists()  # the copy goes with the run
    _ok(run_py([*acquire, "env.seed=1", "protocol.resume=false"]))  # nobody holds it now


def test_a_snapshot_built_with_other_caps_is_refused_naming_both_runs(tmp_path):
    """An evaluation that names another train cap than the snapshot it reads (its numbers
    would not say that its memory came from 2 train tasks) is refused before anything runs,
    with both run folders; a folder given by path is warned about and evaluated. A failed run
    leaves no empty results folder behind."""
    _ok(run_py([*MEMCO, "protocol.max_train_tasks=2", "experiment_name=acq",
                f"paths.results_dir={tmp_path}"]))  # fmt: skip
    source = _run_dir(tmp_path, "acq")
    evaluate = [*MEMCO, "experiment_name=eval", "protocol.snapshot_from=acq",
                f"paths.results_dir={tmp_path}"]  # fmt: skip
    refused = run_py([*evaluate, "protocol.max_train_tasks=3"])
    assert refused.returncode == 2
    text = _said(refused)
    assert "protocol.max_train_tasks: the snapshot's 2, this run's 3" in text
    assert f"the snapshot's: {source}" in text and "This run: " in text
    assert not (tmp_path / "eval").exists()  # no empty run folder left behind
    by_path = run_py([*evaluate, "protocol.max_train_tasks=3",
                      f"protocol.snapshot_from={source}"])  # fmt: skip
    _ok(by_path)
    assert "protocol.max_train_tasks: the snapshot's 2, this run's 3" in _said(by_path)
    assert "Evaluating it as asked" in _said(by_path)


def test_a_renamed_experiment_reads_its_own_snapshot():
    """ReMe (dynamic) starts from its own experiment's ReMe (fixed) run: renaming the
    experiment carries over to the snapshot it reads."""
    assert compose_cfg(["experiment=reme_table1_dynamic"]).protocol.snapshot_from == "reme_table1"
    renamed = compose_cfg(["experiment=reme_table1_dynamic", "experiment_name=mine"])
    assert renamed.protocol.snapshot_from == "mine"


def test_a_failed_data_check_leaves_no_empty_folder(tmp_path):
    refused = run_py([*SCRIPTED, "method=none", "env.require_data=true",
                      f"paths.results_dir={tmp_path}/results"])  # fmt: skip
    assert refused.returncode == 2 and "needs the official data" in _said(refused)
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_an_older_identity_without_the_pin_is_pinned_on_resume(tmp_path):
    """Records made before snapshots were pinned resume (nothing to compare) and gain the pin;
    the next changed snapshot is then refused."""
    store = RunStore(tmp_path)
    store.append("episodes.jsonl", {"task_id": "t0"})
    old = {"protocol.snapshot_from": "acq", "seed": 0}
    store.write_json("identity.json", old)
    store.check_identity({**old, SNAPSHOT_PIN: "a" * 64}, "seed: 0\n")
    assert store.read_json("identity.json") == {**old, SNAPSHOT_PIN: "a" * 64}
    with pytest.raises(ConfigError, match="has changed since"):
        store.check_identity({**old, SNAPSHOT_PIN: "b" * 64}, "seed: 0\n")


def test_a_snapshot_of_another_env_is_refused_naming_both(tmp_path):
    _ok(run_py([*MEMCO, "protocol.max_train_tasks=2", "experiment_name=acq",
                f"paths.results_dir={tmp_path}"]))  # fmt: skip
    source = _run_dir(tmp_path, "acq")
    marker = source / "memory" / "SNAPSHOT_COMPLETE"
    other = ["env=fever", "backbone=scripted", "logger=none", "method=memco",
             f"protocol.snapshot_from={source}", f"paths.results_dir={tmp_path}/fever"]  # fmt: skip
    refused = run_py(other)
    assert refused.returncode == 2
    text = _said(refused)
    assert f"the snapshot {source / 'memory'} was acquired on env.name=pddl_generated" in text
    assert "this run's env.name is fever_smoke" in text
    assert not list((tmp_path / "fever").rglob("episodes.jsonl"))
    assert json.loads(marker.read_text())["env"] == "pddl_generated"
    # a marker written before it recorded the env: the run directory's identity says
    body = json.loads(marker.read_text())
    del body["env"]
    marker.write_text(json.dumps(body) + "\n")
    again = run_py(other)
    assert again.returncode == 2 and "acquired on env.name=pddl_generated" in _said(again)


# --- the embedder stored vectors came from ------------------------------------------------------
class _Loaded:
    """What a SentenceTransformer exposes: its max_seq_length."""

    def __init__(self, max_seq_length: int) -> None:
        self.max_seq_length = max_seq_length


class _Embedder:
    """A SentenceEmbedder's identity attributes, no weights."""

    def __init__(self, max_seq_length=256, normalize=True, model_ref="/x/site/all-MiniLM-L6-v2"):
        self.name, self.dim, self.normalize = "all-minilm-l6-v2", 384, normalize
        self.model_ref, self.model = model_ref, _Loaded(max_seq_length)


def test_stored_vectors_from_an_embedder_with_another_max_seq_length_are_refused(caplog):
    stored = pack(np.eye(2, 384, dtype=np.float32), embedder_identity(_Embedder()))["embedder"]
    # the same model from another folder (another machine's venv) keeps its vectors
    assert stored_matches(stored, _Embedder(model_ref="/y/venv/all-MiniLM-L6-v2"), "test")
    with caplog.at_level(logging.WARNING):
        assert not stored_matches(stored, _Embedder(max_seq_length=128), "test")
    assert "embedder max_seq_length=256, this run's is 128" in caplog.text
    assert not stored_matches(stored, _Embedder(normalize=False), "test")
    assert not stored_matches(stored, _Embedder(model_ref="org/other-minilm"), "test")
    # a snapshot from before the whole identity was recorded: compared on name and dim
    assert stored_matches({"name": "all-minilm-l6-v2", "dim": 384}, _Embedder(128), "test")
    assert stored == {"name": "all-minilm-l6-v2", "dim": 384, "model": "all-MiniLM-L6-v2",
                      "max_seq_length": 256, "normalize": True}  # fmt: skip


# --- the code ----------------------------------------------------------------------------------
def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def test_a_resume_on_another_commit_is_refused_unless_allowed(tmp_path):
    args = [*SCRIPTED, "method=none", "protocol.max_eval_tasks=2", "experiment_name=code",
            f"paths.results_dir={tmp_path}"]  # fmt: skip
    _ok(run_py(args))
    run_dir = _run_dir(tmp_path, "code")
    info_path = run_dir / "run_info.json"
    info = json.loads(info_path.read_text())
    now = info["invocations"][0]["git_commit"]
    assert now == _commit()
    other = "f" * 40
    for entry in info["invocations"]:
        entry["git_commit"] = other  # the records were made at another commit
    info_path.write_text(json.dumps(info))

    refused = run_py(args)
    assert refused.returncode == 2
    text = _said(refused)
    assert f"holds records made by commit {other}" in text
    assert f"this checkout is commit {now}" in text
    assert "protocol.allow_code_change=true" in text and "protocol.resume=false" in text
    assert len(json.loads(info_path.read_text())["invocations"]) == 1  # nothing recorded
    assert info["invocations"][0]["allow_code_change"] is False

    _ok(run_py([*args, "protocol.allow_code_change=true"]))
    last = json.loads(info_path.read_text())["invocations"][-1]
    assert last["allow_code_change"] is True and last["git_commit"] == now
    assert last["code_changed_from"]["git_commit"] == other
    _ok(run_py(args))  # the records' latest code is this one now


def _store_with_records(tmp_path: Path, *invocations: dict) -> RunStore:
    store = RunStore(tmp_path)
    store.append("episodes.jsonl", {"task_id": "t0"})
    store.write_json("run_info.json", {"invocations": list(invocations)})
    return store


def test_uncommitted_changes_count_as_a_code_change_when_hashed(tmp_path):
    before = {"git_commit": "c" * 40, "git_dirty": True, "git_diff_sha256": "1" * 64}
    store = _store_with_records(tmp_path, before)
    with pytest.raises(ConfigError, match=r"uncommitted changes \(diff sha256 111111111111"):
        store.begin_invocation({**before, "git_diff_sha256": "2" * 64})
    store.begin_invocation(dict(before))  # the same changes: the same code
    # an older run_info.json without the hash: the commit only
    older = {"git_commit": "c" * 40, "git_dirty": True}
    assert code_change(older, {**older, "git_diff_sha256": "2" * 64}) is None
    assert code_change(older, {"git_commit": "d" * 40, "git_diff_sha256": None}) == (
        f"commit {'c' * 40} with uncommitted changes (not hashed)",
        f"commit {'d' * 40}",
    )


def test_a_run_outside_a_git_checkout_is_never_refused(tmp_path):
    outside = {"git_commit": None, "git_dirty": None, "git_diff_sha256": None}
    store = _store_with_records(tmp_path, outside)
    store.begin_invocation({"git_commit": "c" * 40, "git_dirty": False, "git_diff_sha256": None})
    store = _store_with_records(tmp_path / "b", {"git_commit": "c" * 40})
    store.begin_invocation(outside)
    assert len(store.read_json("run_info.json")["invocations"]) == 2


def _git_checkout(root: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    (root / "src").mkdir(parents=True)
    (root / "conf").mkdir()
    (root / "src" / "method.py").write_text("K = 1\n")
    (root / "conf" / "method.yaml").write_text("k: 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")


def test_an_untracked_method_file_is_part_of_the_code_identity(tmp_path):
    """A method added as docs/extending.md describes, not yet committed: the tree is dirty,
    the file's content is in the diff hash (so editing it between resumes is a code change),
    and an untracked file outside src/ and conf/ changes nothing."""
    from memarena.pipeline.identity import _git

    _git_checkout(tmp_path)
    clean = _git(tmp_path)
    assert clean["git_dirty"] is False and clean["git_diff_sha256"] is None
    (tmp_path / "notes.txt").write_text("not code\n")
    assert _git(tmp_path) == clean
    new = tmp_path / "src" / "my_method.py"
    new.write_text("class MyMethod: k = 1\n")
    added = _git(tmp_path)
    assert added["git_dirty"] is True and added["git_diff_sha256"]
    assert added["git_untracked"] == ["src/my_method.py"]
    new.write_text("class MyMethod: k = 2\n")
    edited = _git(tmp_path)
    assert edited["git_diff_sha256"] != added["git_diff_sha256"]
    assert code_change(added, edited) is not None  # a resume would be refused
