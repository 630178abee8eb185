"""``python run.py`` without paying for its imports again: runs forked from a warm process.

A run of ``run.py`` spends 15-25 s of a 2-core CPU importing torch, transformers, Hydra and
memarena before it does anything; the suite starts dozens of them. Each pytest worker starts
one *zygote* (this file as a script), which imports those modules once, runs nothing, and then
forks a child per request. The child is the run: ``run.py`` executed as ``__main__`` with the
request's argv, working directory and environment (``PYTHONPATH`` on ``sys.path`` as Python
would put it), stdin from /dev/null, stdout and stderr to files, in a session of its own; its
exit status is what ``python run.py`` would return (an uncaught exception: its traceback and
status 1). What the child shares with the zygote is only what importing the modules did; every
config, model, cache and logger is built in the child. The parent sees a
``subprocess.CompletedProcess``, or ``subprocess.TimeoutExpired`` after killing the child's
process group.

``pytest --spawn-runs`` starts each run as a plain ``python run.py`` instead.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

# what every run imports before it composes its config (the heavy part of its start-up)
PRELOAD = (
    "numpy",
    "torch",
    "transformers",
    "transformers.models.llama.modeling_llama",
    "hydra",
    "omegaconf",
    "memarena.config_resolvers",
    "memarena.cli",
    "memarena.config_check",
    "memarena.pipeline",
    "memarena.pipeline.build",
    "memarena.llm.hf",
    "memarena.llm.int4_decode",
    "memarena.pipeline.evaluate",
    "memarena.pipeline.summarize",
    "memarena.results.metrics",
    "scipy.stats",
    "statsmodels.stats.proportion",
    "networkx",
    "sentence_transformers",
    "memarena.embed.sentence",
)


# --- the zygote (this file run as a script) -------------------------------------------------
def serve() -> None:
    """Import PRELOAD, then fork one child per JSON request line on stdin; answer its pid.
    The zygote reaps its children and writes each one's exit status (as ``subprocess`` gives
    it: negative for a signal) into the request's ``status`` file."""
    import importlib

    sys.path.pop(0)  # tests/ (this script's folder) is not on a run's path
    for name in PRELOAD:
        importlib.import_module(name)
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401  (lazy modules)

    _warm_alfworld()

    pending: dict[int, str] = {}  # pid -> its status file
    ended: dict[int, int] = {}  # pid -> status, reaped before it was registered

    def reap(*_) -> None:
        while True:
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(raw)
            if pid in pending:
                _write_status(pending.pop(pid), code)
            else:
                ended[pid] = code

    signal.signal(signal.SIGCHLD, reap)
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        if pid in ended:
            _write_status(request["status"], ended.pop(pid))
        else:
            pending[pid] = request["status"]
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()


def _warm_alfworld() -> None:
    """ALFWorld's engine imported and the ALFRED grammar's rules parsed once, in the zygote:
    every forked run that plays a game starts with the imports done and TextWorld's remembered
    rule parses (memarena.envs.alfworld.engine.memoized_parsers); each game's own grammar text
    (its goal filled in) is still parsed by the run."""
    try:
        from memarena.envs.alfworld import engine

        with engine._quiet_alfworld_import():
            from textworld.envs.pddl.logic import GameLogic
        engine.memoized_parsers()
        domain, grammar = engine.load_logic()
        GameLogic(domain=domain, grammar=grammar)
    except Exception:  # noqa: BLE001  (without alfworld, its tests say what to install)
        pass


def _write_status(path: str, code: int) -> None:
    tmp = f"{path}.tmp"
    Path(tmp).write_text(str(code))
    os.replace(tmp, path)


def _child(request: dict) -> None:
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _redirect(request["stdout"], request["stderr"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        script = request["argv"][0]
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [str(Path(script).resolve().parent), *extra]
        sys.argv = list(request["argv"])
        import runpy

        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException:  # noqa: BLE001  (what the interpreter prints for an uncaught one)
        traceback.print_exc()
        code = 1
    finally:
        try:
            # as the interpreter's own exit: join non-daemon threads and run threading's exit
            # hooks first (loky's and concurrent.futures' shutdown of their workers), then atexit
            # (multiprocessing joins its children there: without the hooks, joblib's never end)
            threading._shutdown()
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            os._exit(code)


def _redirect(stdout: str, stderr: str) -> None:
    for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, stdout, os.O_WRONLY),
                           (2, stderr, os.O_WRONLY)):  # fmt: skip
        target = os.open(path, mode)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def _exit_code(code) -> int:
    """``sys.exit(code)`` as the interpreter turns it into a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


# --- the client (in a pytest worker) ---------------------------------------------------------
class Zygote:
    """One warm process per pytest worker, started on first use, stopped at exit."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        # the environment the zygote starts in: the session's, as tests/conftest.py found it
        # before any test ran (never a test's monkeypatched one, which the imports would keep)
        self.start_env: dict[str, str] | None = None

    def _started(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=self.start_env,
            )
            atexit.register(self.stop)
        return self._proc

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float):
        """``subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout)`` for ``argv = [sys.executable, <script>, *args]``."""
        with tempfile.TemporaryDirectory(prefix="prefork-") as tmp:
            files = {name: str(Path(tmp, name)) for name in ("stdout", "stderr", "status")}
            for name in ("stdout", "stderr"):
                Path(files[name]).touch()
            request = {"argv": argv[1:], "cwd": str(cwd), "env": env, **files}
            with self._lock:
                proc = self._started()
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                answer = proc.stdout.readline()
            if not answer:
                raise RuntimeError(f"the prefork zygote exited (status {proc.poll()})")
            pid = int(answer)
            finished = _wait(pid, timeout)
            status = Path(files["status"])
            for _ in range(200):  # the zygote writes it once it has reaped the child
                if status.exists():
                    break
                time.sleep(0.05)
            out, err = (Path(files[n]).read_text(errors="replace") for n in ("stdout", "stderr"))
            if not finished:
                raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
            if not status.exists():
                raise RuntimeError(f"the prefork zygote wrote no exit status for {pid}")
            return subprocess.CompletedProcess(argv, int(status.read_text()), out, err)

def _wait(pid: int, timeout: float) -> bool:
    """Wait for the zygote's child ``pid`` to end (or become a zombie for the zygote to reap);
    False (the child's group killed) at timeout."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # ended and reaped already
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        while not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            if time.monotonic() >= deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                poller.poll(5000)
                return False
        return True
    finally:
        os.close(fd)


ZYGOTE = Zygote()

if __name__ == "__main__":
    serve()
