"""Logging: ``run.log`` in the run directory, and third-party DEBUG noise off by default
(``conf/hydra/job_logging/memarena.yaml``: a filter on the handlers)."""

from __future__ import annotations

import logging
import logging.config
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import ROOT
from memarena.results.run_log import QuietLoggers

ARGS = ["env=pddl", "method=none", "backbone=scripted", "logger=none",
        "protocol.max_train_tasks=0", "protocol.max_eval_tasks=2"]


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for h in root.handlers[:]:
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_job_logging_config_drops_third_party_debug(tmp_path, restore_logging):
    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "conf/hydra/job_logging/memarena.yaml"))
    cfg["handlers"]["file"]["filename"] = str(tmp_path / "run.log")
    cfg["root"]["handlers"] = ["file"]
    logging.config.dictConfig(cfg)
    logging.getLogger().setLevel(logging.DEBUG)  # as hydra.verbose=true, or a library, sets it
    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # what bm25s does when imported
    logging.getLogger("bm25s").debug("bm25s noise")
    logging.getLogger("bm25s.tokenization").info("bm25s child noise")
    logging.getLogger("httpx").info("httpx noise")
    logging.getLogger("urllib3.connectionpool").debug("urllib3 noise")
    logging.debug("bare root noise")
    logging.getLogger("bm25s").warning("bm25s warning kept")
    logging.getLogger("memarena.x").debug("our debug kept")
    logging.getLogger("memarena.x").info("our info kept")
    text = (tmp_path / "run.log").read_text()
    assert "noise" not in text, text
    for kept in ("bm25s warning kept", "our debug kept", "our info kept"):
        assert kept in text


def test_quiet_loggers_matches_names_and_children():
    f = QuietLoggers({"httpx": "WARNING", "a.b": 10})

    def rec(name, level):
        return logging.LogRecord(name, level, __file__, 1, "m", None, None)

    assert not f.filter(rec("httpx._client", logging.INFO))
    assert f.filter(rec("httpx", logging.WARNING))
    assert f.filter(rec("httpxy", logging.DEBUG))  # another logger, not a child
    assert f.filter(rec("a.b.c", logging.DEBUG)) and not f.filter(rec("a.b", 5))


def _run(results: Path, *extra: str) -> subprocess.CompletedProcess:
    """run.py with hydra.verbose=true (root at DEBUG), third-party loggers chattering as each
    episode ends."""
    code = textwrap.dedent(
        f"""
        import logging, runpy, sys
        from memarena.results import store
        original = store.RunStore.append_record
        def append_record(self, name, record):
            original(self, name, record)
            logging.getLogger("bm25s").setLevel(logging.DEBUG)
            logging.getLogger("bm25s").debug("bm25s noise")
            logging.getLogger("httpx").info("httpx noise")
            logging.debug("bare root noise")
        store.RunStore.append_record = append_record
        sys.argv = ["run.py"] + {[*ARGS, f"paths.results_dir={results}",
                                 f"paths.log_dir={results}/logs", "hydra.verbose=true",
                                 *extra]!r}
        runpy.run_path({str(ROOT / "run.py")!r}, run_name="__main__")
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_run_log_in_run_dir_without_noise(tmp_path):
    proc = _run(tmp_path / "quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_log,) = (tmp_path / "quiet").glob("demo*/*/*/*/seed0/run.log")
    text = run_log.read_text()
    assert "evaluation run 0: 2 tasks" in text and "results in" in text
    assert "[DEBUG]" in text  # hydra.verbose: our own DEBUG lines are there
    assert "noise" not in text and "noise" not in proc.stdout + proc.stderr
    hydra_log = next((tmp_path / "quiet/logs").rglob("run.log"))
    assert "results in" in hydra_log.read_text()  # Hydra's copy stays where it was

    # the filter is what keeps them out: emptied from the command line, the noise is back
    loud = _run(tmp_path / "loud", "~hydra.job_logging.filters.quiet.loggers")
    assert loud.returncode == 0, loud.stderr[-2000:]
    (run_log,) = (tmp_path / "loud").glob("demo*/*/*/*/seed0/run.log")
    text = run_log.read_text()
    assert "[bm25s][DEBUG] - bm25s noise" in text and "[httpx][INFO] - httpx noise" in text
    assert "[root][DEBUG] - bare root noise" in text
