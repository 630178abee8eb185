"""AppWorld environment servers: one world per server process, a pool of them for parallel
episodes.

:class:`AppWorldServer` starts one server in AppWorld's own virtual environment (its package
pins pydantic<2, so it never shares the main venv) on a loopback port, waits until ``GET /``
answers, and stops it (terminate, then kill). ``launcher`` picks the command:

- ``loopback`` (default): ``<python> serve_loopback.py --port P --root ROOT``, the package's
  environment app bound to 127.0.0.1;
- ``cli``: ``<venv>/bin/appworld serve environment --port P --root ROOT --no-show-usage``,
  AppWorld's own command, which binds all interfaces (0.0.0.0) in appworld 0.1.3.post1.

:class:`ServerPool` hands a free, live server to each episode (``acquire``/``release``),
starting servers on demand up to ``n_servers`` (or one per port of ``ports``); a server found
dead is restarted before it is handed out again (the episode that was on it ends with status
``error``: its requests raise). Every server is stopped by ``close()``, on leaving a ``with``
block, and at interpreter exit (``atexit``).
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from memarena.core.errors import MemarenaError
from memarena.core.processes import LOOPBACK, free_port, stop
from memarena.envs.appworld.client import AppWorldClient, AppWorldServerError

log = logging.getLogger(__name__)

LAUNCHERS = ("loopback", "cli")
HOST = LOOPBACK
LOOPBACK_SCRIPT = Path(__file__).with_name("serve_loopback.py")
_LOG_TAIL_LINES = 25


class AppWorldServer:
    """One ``appworld serve environment`` process (see the module docstring)."""

    def __init__(
        self,
        python: str,
        root: str,
        port: int,
        index: int = 0,
        launcher: str = "loopback",
        startup_timeout: float = 120.0,
        request_timeout: float = 300.0,
        log_dir: str | None = None,
    ) -> None:
        if launcher not in LAUNCHERS:
            raise MemarenaError(f"memarena: env.launcher={launcher!r}; valid: {list(LAUNCHERS)}")
        self.python = venv_python(python)  # absolute: the server runs with cwd=root
        self.root = str(Path(root).resolve())
        self.port = int(port)
        self.index = index
        self.launcher = launcher
        self.startup_timeout = float(startup_timeout)
        self.log_path = Path(log_dir or tempfile.gettempdir()) / f"appworld_server_{port}.log"
        self.process: subprocess.Popen | None = None
        self.client = AppWorldClient(
            f"http://{HOST}:{self.port}", timeout=request_timeout, log_tail=self.log_tail
        )
        self.starts = 0

    def command(self) -> list[str]:
        if self.launcher == "cli":
            appworld = str(Path(self.python).parent / "appworld")
            return [appworld, "serve", "environment", "--port", str(self.port),
                    "--root", self.root, "--no-show-usage"]  # fmt: skip
        return [self.python, str(LOOPBACK_SCRIPT), "--port", str(self.port), "--root", self.root]

    def start(self) -> AppWorldServer:
        """Start the process and wait until it answers; AppWorldServerError (with the server's
        last log lines) when it exits or stays silent past ``startup_timeout``."""
        self.stop()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log_file:
            try:
                self.process = subprocess.Popen(
                    self.command(),
                    cwd=self.root,  # AppWorld reads a .env from the working directory
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise AppWorldServerError(
                    f"AppWorld server could not start ({' '.join(self.command())}): {exc}"
                ) from None
        self.starts += 1
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.startup_timeout:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise AppWorldServerError(
                    f"AppWorld server on port {self.port} exited with code {code} while starting "
                    f"(command: {' '.join(self.command())})\n{self.log_tail()}"
                )
            if self.client.alive(timeout=1.0):
                log.info("AppWorld server %d up on port %d in %.1f s",
                         self.index, self.port, time.monotonic() - t0)  # fmt: skip
                return self
            time.sleep(0.1)
        self.stop()
        raise AppWorldServerError(
            f"AppWorld server on port {self.port} did not answer within {self.startup_timeout:.0f}"
            f" s (env.startup_timeout)\n{self.log_tail()}"
        )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def healthy(self) -> bool:
        return self.running() and self.client.alive()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop(process)

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-_LOG_TAIL_LINES:])


class ServerPool:
    """Servers for parallel episodes (see the module docstring)."""

    def __init__(
        self,
        python: str,
        root: str,
        n_servers: int | None = None,
        ports: Sequence[int] | None = None,
        launcher: str = "loopback",
        startup_timeout: float = 120.0,
        request_timeout: float = 300.0,
        log_dir: str | None = None,
    ) -> None:
        self.python, self.root = python, root
        self.ports = list(ports or [])
        self.n_servers = len(self.ports) if self.ports else n_servers
        self.launcher = launcher
        self.startup_timeout, self.request_timeout = startup_timeout, request_timeout
        self.log_dir = log_dir
        self.servers: list[AppWorldServer] = []
        self._free: deque[AppWorldServer] = deque()
        self._lock = threading.Lock()
        self.restarts = 0
        atexit.register(self.close)

    def acquire(self) -> AppWorldServer:
        """A live server for one episode: a free one (restarted when found dead) or a new one."""
        with self._lock:
            server = self._free.popleft() if self._free else self._new()
        if not server.healthy():
            if server.starts:
                self.restarts += 1
                log.warning("AppWorld server on port %d is down; restarting it", server.port)
            try:
                server.start()
            except AppWorldServerError:
                with self._lock:
                    self._free.append(server)
                raise
        return server

    def _new(self) -> AppWorldServer:
        if self.n_servers is not None and len(self.servers) >= self.n_servers:
            raise MemarenaError(
                f"memarena: env=appworld: all {self.n_servers} AppWorld servers are busy (one "
                "world per server); set env.n_servers (or env.ports) to at least "
                "protocol.concurrency, or null to start one per open episode."
            )
        index = len(self.servers)
        port = self.ports[index] if self.ports else free_port()
        server = AppWorldServer(
            self.python, self.root, port, index=index, launcher=self.launcher,
            startup_timeout=self.startup_timeout, request_timeout=self.request_timeout,
            log_dir=self.log_dir,
        )  # fmt: skip
        self.servers.append(server)
        return server

    def release(self, server: AppWorldServer) -> None:
        with self._lock:
            if server not in self._free:
                self._free.append(server)

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        with self._lock:
            self._free = deque(self.servers)

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass


def venv_python(python: str) -> str:
    """The AppWorld venv's python as an absolute path (relative paths: from the working
    directory run.py starts in, like every path in conf/)."""
    return os.path.abspath(os.path.expanduser(str(python)))
