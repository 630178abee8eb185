"""Shared caches under parallel jobs (issue 36, item 1): one builder under a lock, a private
folder renamed into place, and a manifest verified before a cached folder is trusted.

The races are run with real processes (subprocesses started together), never threads."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from needs import need_alfworld

from memarena.core import cache_build as cb

ROOT = Path(__file__).resolve().parents[1]
# the tiny suite: two bathroom games, ~3 s to build on one core
SPEC_ARGS = ("('bathroom',)", "('pick_and_place', 'pick_clean_then_place')", 1, 1, 0, 2, 1, 5, 30)


def _start_together(script: str, n: int, tmp: Path) -> list[subprocess.CompletedProcess]:
    """Run ``script`` in ``n`` processes released at the same moment (a go file)."""
    go = tmp / "go"
    prelude = textwrap.dedent(f"""
        import os, sys, time, logging
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", prelude + textwrap.dedent(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for _ in range(n)
    ]
    time.sleep(1.5)  # both are waiting on the go file (imports done)
    go.write_text("")
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, ""))
    return out


# -- the generic helper -----------------------------------------------------------------------
def test_build_once_two_processes_build_once(tmp_path):
    folder = tmp_path / "cache" / "thing"
    script = f"""
        from pathlib import Path
        from memarena.core.cache_build import build_once

        def build(tmp):
            tmp.mkdir()
            with open({str(tmp_path / "builds.log")!r}, "a") as fh:
                fh.write(f"{{os.getpid()}}\\n")
            for i in range(20):
                (tmp / f"part{{i}}.txt").write_text(str(i) * 1000)
                time.sleep(0.05)

        build_once(Path({str(folder)!r}), build, what="a test artefact")
        print("done", len(list(Path({str(folder)!r}).glob("part*.txt"))))
    """
    runs = _start_together(script, 2, tmp_path)
    assert [r.returncode for r in runs] == [0, 0], [r.stdout for r in runs]
    assert all("done 20" in r.stdout for r in runs)
    assert len((tmp_path / "builds.log").read_text().split()) == 1  # the other one waited
    assert any("waiting for a test artefact" in r.stdout for r in runs)
    cb.verify(folder)
    assert sorted(p.name for p in folder.parent.iterdir()) == [".thing.lock", "thing"]


def test_build_once_rebuilds_what_does_not_verify(tmp_path, caplog):
    folder = tmp_path / "thing"
    calls = []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        tmp.mkdir()
        (tmp / "a.txt").write_text("hello")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b.bin").write_bytes(b"\0" * 100)

    cb.build_once(folder, build, what="the thing")
    cb.build_once(folder, build, what="the thing")
    assert len(calls) == 1  # reused
    caplog.set_level(logging.WARNING, logger=cb.log.name)
    for damage, says in [
        (lambda: (folder / "sub" / "b.bin").unlink(), "b.bin is listed in"),
        (lambda: (folder / "a.txt").write_text("hellO"), "a.txt does not match its sha256"),
        (lambda: (folder / "a.txt").write_text("hi"), "a.txt has 2 bytes"),
        (lambda: (folder / cb.MANIFEST).unlink(), "is missing (an interrupted build"),
        (lambda: (folder / cb.MANIFEST).write_text("{"), "is unreadable"),
    ]:
        damage()
        caplog.clear()
        cb.build_once(folder, build, what="the thing")
        (msg,) = [r.getMessage() for r in caplog.records]
        assert "cached the thing does not verify" in msg and says in msg and "rebuilding" in msg
        cb.verify(folder)
        assert (folder / "a.txt").read_text() == "hello"
    assert len(calls) == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == [".thing.lock", "thing"]


def test_build_once_failed_build_leaves_nothing_and_stale_tmp_is_cleared(tmp_path):
    folder = tmp_path / "thing"
    stale = tmp_path / ".thing.tmp-99999-dead"  # a killed builder's leftover
    stale.mkdir()

    def broken(tmp: Path) -> None:
        tmp.mkdir()
        (tmp / "half").write_text("x")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        cb.build_once(folder, broken, what="the thing")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".thing.lock"]


# -- the household suite ----------------------------------------------------------------------
def test_two_processes_build_one_household_suite(tmp_path):
    """The issue's crash: two jobs generating the same suite into an empty cache at once."""
    need_alfworld()
    root = tmp_path / "alf"
    script = f"""
        from pathlib import Path
        from memarena.envs.alfworld import generator as gen
        spec = gen.SuiteSpec({", ".join(map(str, SPEC_ARGS))})
        out = gen.generate_suite(spec, Path({str(root)!r}), workers=1)
        print("suite at", out)
    """
    runs = _start_together(script, 2, tmp_path)
    assert [r.returncode for r in runs] == [0, 0], [r.stdout[-3000:] for r in runs]
    logs = "".join(r.stdout for r in runs)
    assert logs.count("generating the household suite") == 1, logs
    (out,) = [p for p in root.iterdir() if not p.name.startswith(".")]
    from memarena.envs.alfworld import generator as gen

    cb.verify(out, gen.check_suite)  # every listed game is there, files match the manifest
    games = json.loads((out / "suite.json").read_text())["games"]
    assert len(games["train"]) == len(games["valid_seen"]) == 1
    assert sorted(p.name for p in root.iterdir()) == sorted([out.name, f".{out.name}.lock"])


def test_household_suite_with_missing_games_is_rebuilt(tmp_path, caplog):
    """The issue's poisoned cache: suite.json lists games whose folders are gone."""
    need_alfworld()
    from memarena.envs.alfworld import generator as gen

    spec = gen.SuiteSpec(
        ("bathroom",), ("pick_and_place", "pick_clean_then_place"), 1, 1, 0, 2, 1, 5, 30
    )
    out = gen.generate_suite(spec, tmp_path, workers=1)
    games = json.loads((out / "suite.json").read_text())["games"]
    listed = games["train"] + games["valid_seen"]
    before = {g: (out / g / "game.tw-pddl").read_text() for g in listed}
    caplog.set_level(logging.INFO)
    for damage in ("game folder", "manifest too"):  # an old cache has no manifest at all
        shutil.rmtree(out / listed[0])
        if damage == "manifest too":
            (out / cb.MANIFEST).unlink()
        caplog.clear()
        assert gen.generate_suite(spec, tmp_path, workers=1) == out
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warned) == 1 and "cached the household suite does not verify" in warned[0]
        assert "rebuilding" in warned[0] and str(out) in warned[0]
        assert any("generating the household suite" in r.getMessage() for r in caplog.records)
        assert {g: (out / g / "game.tw-pddl").read_text() for g in listed} == before
        cb.verify(out, gen.check_suite)


def test_check_suite_names_the_missing_game(tmp_path):
    from memarena.envs.alfworld import generator as gen

    (tmp_path / "suite.json").write_text(
        json.dumps(
            {"games": {"train": ["train/x/trial_00001"], "valid_seen": [], "valid_unseen": []}}
        )  # fmt: skip
    )
    with pytest.raises(cb.CacheInvalid, match=r"lists train/x/trial_00001 but .*game.tw-pddl"):
        gen.check_suite(tmp_path)


# -- the wiki index ---------------------------------------------------------------------------
def test_wiki_index_that_does_not_verify_is_rebuilt(tmp_path, caplog):
    from memarena.envs.wiki.local import LocalWiki

    corpus = tmp_path / "pages.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"title": f"Page {i}", "text": f"Page {i} is about topic {i}."}) + "\n"
            for i in range(30)
        )
    )
    cache = tmp_path / "cache"
    LocalWiki(path=str(corpus), cache_dir=str(cache))
    (index,) = cache.glob("index-*/titles.json")
    index.write_text(index.read_text()[:10])  # a torn write: truncated JSON
    caplog.set_level(logging.WARNING)
    wiki = LocalWiki(path=str(corpus), cache_dir=str(cache))
    (msg,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "cached the wiki index does not verify" in msg and "titles.json has 10 bytes" in msg
    assert wiki.search("Page 7").found and len(wiki) == 30
    cb.verify(index.parent)
    assert LocalWiki(path=str(corpus), cache_dir=str(cache)).search("Page 3").found


# -- converted model weights ------------------------------------------------------------------
class _FakeConfig:
    pass


class _FakeModel:
    def __init__(self) -> None:
        self.config = _FakeConfig()

    def save_pretrained(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "model.safetensors").write_bytes(b"w" * 4096)
        (Path(folder) / "config.json").write_text("{}")


class _FakeTokenizer:
    def save_pretrained(self, folder: Path) -> None:
        (Path(folder) / "tokenizer.json").write_text("{}")


def test_converted_weights_that_do_not_verify_are_rebuilt(tmp_path, monkeypatch, caplog):
    from memarena.llm import hf_loading as hf

    reads = []

    def fake_from_pretrained(source, dtype, trust_remote_code):
        reads.append(source.ref)
        return _FakeModel(), _FakeTokenizer()

    monkeypatch.setattr(hf, "_from_pretrained", fake_from_pretrained)
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    converted = tmp_path / "converted"
    folder = Path(hf.local_weights(str(gguf), None, converted))
    assert hf.local_weights(str(gguf), None, converted) == str(folder) and len(reads) == 1
    (folder / "model.safetensors").write_bytes(b"w" * 100)  # truncated by a killed writer
    caplog.set_level(logging.WARNING)
    assert hf.local_weights(str(gguf), None, converted) == str(folder)
    (msg,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "cached the converted weights" in msg and "model.safetensors has 100 bytes" in msg
    assert len(reads) == 2 and (folder / "model.safetensors").stat().st_size == 4096
    assert (folder / hf._DONE).is_file()
    cb.verify(folder)


def test_converted_weights_from_before_manifests_are_adopted_not_reconverted(
    tmp_path, monkeypatch, caplog
):
    """A copy written by the old (already atomic) converter is kept: large weights are not
    converted again; a folder that is not such a copy is rebuilt."""
    from memarena.llm import hf_loading as hf

    reads = []
    monkeypatch.setattr(
        hf, "_from_pretrained", lambda *a: reads.append(1) or (_FakeModel(), _FakeTokenizer())
    )
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    folder = Path(hf.local_weights(str(gguf), None, tmp_path / "converted"))
    (folder / cb.MANIFEST).unlink()  # as the old converter left it
    caplog.set_level(logging.INFO, logger=cb.log.name)
    assert hf.local_weights(str(gguf), None, tmp_path / "converted") == str(folder)
    assert len(reads) == 1 and any("predates manifests" in r.getMessage() for r in caplog.records)
    cb.verify(folder)
    (folder / cb.MANIFEST).unlink()
    (folder / "model.safetensors").unlink()  # not a complete old copy: converted again
    hf.local_weights(str(gguf), None, tmp_path / "converted")
    assert len(reads) == 2 and (folder / "model.safetensors").is_file()
    cb.verify(folder)


# -- the AppWorld smoke root ------------------------------------------------------------------
def test_appworld_smoke_root_is_built_once_and_rebuilt_when_broken(tmp_path, monkeypatch, caplog):
    """smoke_root.py runs in AppWorld's venv: it loads cache_build.py by path (the real AppWorld
    build is replaced here by a stand-in that writes the same marker)."""
    from memarena.envs.appworld import smoke_root

    builds = []

    def fake_build(out: str) -> None:
        builds.append(out)
        data = Path(out) / "data"
        (data / "datasets").mkdir(parents=True)
        (data / "datasets" / "test_normal.txt").write_text("smk003_1\n")
        (data / ".memarena_smoke").write_text("built\n")

    monkeypatch.setattr(smoke_root, "build", fake_build)
    out = tmp_path / "appworld" / "smoke_root"
    monkeypatch.setattr(sys, "argv", ["smoke_root.py", str(out)])
    assert smoke_root.main() == 0 and smoke_root.main() == 0
    assert len(builds) == 1 and ".smoke_root.tmp-" in builds[0]  # a private folder, renamed
    (out / "data" / ".memarena_smoke").unlink()
    caplog.set_level(logging.WARNING)
    assert smoke_root.main() == 0 and len(builds) == 2
    assert any(
        "cached the AppWorld smoke root does not verify" in r.getMessage() for r in caplog.records
    )
    assert (out / "data" / ".memarena_smoke").is_file()
    cb.verify(out)
