"""One ScienceWorld JVM behind a small Python handle, and a pool of idle ones.

The package's ``ScienceWorldEnv`` starts ``java`` through py4j without a heap cap; we pass
``-Xmx<jvm_memory>`` by wrapping py4j's ``launch_gateway`` while the JVM starts. Steps talk to
the Java server directly (the package's ``step`` also fetches the look, inventory and the full
valid-action list on every call, which we need only once per step, in template form).

A dead JVM (killed, crashed, out of memory) surfaces as :class:`SimulatorError` naming the pid;
such a handle is never returned to the pool, so the next episode gets a fresh JVM.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import threading
from typing import Any

log = logging.getLogger(__name__)
# py4j logs a full traceback at ERROR for every call into a dead JVM; we raise SimulatorError
# with the pid instead, so its gateway logger is kept quiet.
logging.getLogger("py4j.java_gateway").setLevel(logging.CRITICAL)
logging.getLogger("scienceworld.scienceworld").setLevel(logging.WARNING)  # one INFO per load

_LAUNCH_LOCK = threading.Lock()


class SimulatorError(RuntimeError):
    """The ScienceWorld JVM died or stopped answering."""


# The true minimum: scienceworld 1.2.3's jar holds Java 8 class files (major version 52; its
# README: "Java 1.8+"). memarena's tests run it on Java 17, the version environment.yml installs.
JAVA_NEEDED = "Java 8 or newer (tested with Java 17)"


def require_java() -> None:
    """One message, before any JVM is started, when there is no ``java`` on PATH (the package
    would fail with a raw FileNotFoundError and a py4j ``_gateway`` traceback at exit)."""
    if shutil.which("java") is None:
        from memarena.core.errors import ConfigError

        raise ConfigError(
            f"memarena: env=scienceworld needs {JAVA_NEEDED}: ScienceWorld's simulator is a "
            "Java program, and there is no `java` on PATH. Install one, e.g. sudo apt-get "
            "install -y openjdk-17-jre-headless (Debian/Ubuntu) or conda install -c "
            "conda-forge openjdk=17 (environment.yml lists it), then rerun."
        )


def _import_scienceworld() -> Any:
    try:
        import scienceworld.scienceworld as swmod
    except ImportError:
        from memarena.core.errors import ConfigError

        raise ConfigError(
            "memarena: env=scienceworld needs the `scienceworld` package (pip install "
            f"scienceworld==1.2.3) and {JAVA_NEEDED} on PATH."
        ) from None
    return swmod


class Simulator:
    """A started JVM running ScienceWorld; ``load`` picks (task, variation)."""

    def __init__(self, jvm_memory: str = "1g", env_step_limit: int = 10000) -> None:
        swmod = _import_scienceworld()
        require_java()
        opts = [f"-Xmx{jvm_memory}"] if jvm_memory else []
        original = swmod.launch_gateway
        with _LAUNCH_LOCK:  # the patch is module-global: one JVM start at a time
            swmod.launch_gateway = functools.partial(_launch_with_opts, original, opts)
            try:
                self.env = swmod.ScienceWorldEnv("", envStepLimit=env_step_limit)
            finally:
                swmod.launch_gateway = original
        self.pid: int = self.env._gateway.java_process.pid
        self.dead = False
        self.gold_loaded = False
        log.debug("ScienceWorld JVM started (pid %d, -Xmx%s)", self.pid, jvm_memory)

    # -- calls --------------------------------------------------------------------------------
    def call(self, what: str, fn: Any, *args: Any) -> Any:
        """Run one call into the JVM; any py4j/socket failure becomes SimulatorError."""
        if self.dead:
            raise SimulatorError(f"ScienceWorld JVM (pid {self.pid}) is no longer running")
        try:
            return fn(*args)
        except Exception as exc:
            if isinstance(exc, ValueError) and what == "load":
                raise
            if self.alive():
                raise
            self.dead = True
            raise SimulatorError(
                f"ScienceWorld JVM (pid {self.pid}) died during {what}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            ) from exc

    def load(self, task_name: str, variation: int, simplification: str, gold: bool) -> None:
        self.call("load", self.env.load, task_name, variation, simplification, gold)
        self.gold_loaded = gold

    # Attribute access on the py4j server object is itself a call into the JVM (auto_field), so
    # every server method is looked up inside ``call``.
    def _server(self, what: str, method: str, *args: Any) -> Any:
        return self.call(what, lambda: getattr(self.env.server, method)(*args))

    def reset(self) -> None:
        self._server("reset", "reset")

    def step(self, action: str) -> tuple[str, int, bool]:
        """(observation, score in [-100, 100], completed-by-the-task)."""
        obs = self._server("step", "step", action)
        score = int(round(100 * self._server("step", "getScore")))
        completed = bool(self._server("step", "getCompleted"))
        return str(obs), score, completed

    def look(self) -> str:
        return str(self._server("look", "freeActionLook"))

    def inventory(self) -> str:
        return str(self._server("inventory", "freeActionInventory"))

    def task_description(self) -> str:
        return str(self._server("task description", "freeActionTaskDesc"))

    def valid_actions(self) -> list[dict[str, Any]]:
        """Valid action/object combinations: dicts with ``action``, ``template_id``, ``obj_ids``."""
        text = self._server("valid actions", "getValidActionObjectCombinationsJSON")
        return list(json.loads(text)["validActions"])

    def gold_actions(self) -> list[str]:
        return [str(a) for a in self._server("gold path", "getGoldActionSequence")]

    def variations(self, task_name: str) -> dict[str, list[int]]:
        self.load(task_name, 0, "", False)
        return {
            "train": [int(v) for v in self.call("variations", self.env.get_variations_train)],
            "dev": [int(v) for v in self.call("variations", self.env.get_variations_dev)],
            "test": [int(v) for v in self.call("variations", self.env.get_variations_test)],
        }

    # -- lifecycle ----------------------------------------------------------------------------
    def alive(self) -> bool:
        # Popen.poll() answers None while py4j's own thread waits on the process, so the pid
        # itself is checked too.
        proc = self.env._gateway.java_process
        return proc is not None and proc.poll() is None and pid_alive(self.pid)

    def close(self) -> None:
        """Shut the gateway down and make sure the java process is gone."""
        proc = self.env._gateway.java_process
        try:
            if not self.dead and self.alive():
                self.env.close()
        except Exception as exc:  # a dying JVM may refuse the polite shutdown
            log.debug("ScienceWorld JVM %d: shutdown raised %s", self.pid, exc)
        try:
            self.env._gateway.shutdown()
        except Exception:
            pass
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=5)
            except Exception:
                proc.kill()
                proc.wait(timeout=5)
        self.env.close = lambda: None  # the package's __del__ calls close again
        self.dead = True


def _launch_with_opts(original: Any, opts: list[str], *args: Any, **kwargs: Any) -> Any:
    kwargs["javaopts"] = [*opts, *kwargs.get("javaopts", [])]
    return original(*args, **kwargs)


class SimulatorPool:
    """Idle JVMs kept for reuse (loading a task is ~0.1 s; starting a JVM ~1.5 s)."""

    def __init__(self, jvm_memory: str, max_idle: int) -> None:
        require_java()  # when the env is built, not at the first episode
        self.jvm_memory = jvm_memory
        self.max_idle = max_idle
        self._idle: list[Simulator] = []
        self._busy: set[Simulator] = set()
        self._lock = threading.Lock()

    def acquire(self) -> Simulator:
        with self._lock:
            while self._idle:
                sim = self._idle.pop()
                if sim.alive() and not sim.dead:
                    self._busy.add(sim)
                    return sim
                sim.close()
        sim = Simulator(self.jvm_memory)
        with self._lock:
            self._busy.add(sim)
        return sim

    def release(self, sim: Simulator) -> None:
        with self._lock:
            self._busy.discard(sim)
            keep = not sim.dead and sim.alive() and len(self._idle) < self.max_idle
            if keep:
                self._idle.append(sim)
        if not keep:
            sim.close()

    def pids(self) -> list[int]:
        with self._lock:
            return [s.pid for s in [*self._idle, *self._busy]]

    def close(self) -> None:
        with self._lock:
            sims = [*self._idle, *self._busy]
            self._idle, self._busy = [], set()
        for sim in sims:
            sim.close()


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, killed but not yet reaped, counts as dead)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
