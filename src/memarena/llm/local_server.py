"""A real OpenAI-compatible server on loopback serving the embedded SmolLM2-135M GGUF:
llama-cpp-python's (``python -m llama_cpp.server``; built by ``scripts/build_llama_cpp.sh``, which
``make test`` runs). Used by the openai engine's tests and ``benchmarks/openai_throughput.py``;
handy to try ``backbone=openai_server`` on a laptop:

    with embedded_server() as server:   # server.url: http://127.0.0.1:<free port>/v1
        ...                             # served model name: SERVED_NAME

Start-up waits for ``GET /models`` and then for one real chat completion, so a server that
answers its model list but dies on its first matrix kernel (a llama.cpp build with instructions
this CPU cannot run: SIGILL) fails at start, with its exit signal and the tail of its log. The
process is always stopped when the block ends (terminate, then kill).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memarena.core.processes import free_port, stop  # noqa: F401  (free_port: re-exported)
from memarena.llm.embedded import resolve_embedded_llm

SERVED_NAME = "smollm2-135m"
LOG_TAIL_LINES = 40
_SIGNAL_HINTS = {
    signal.SIGILL: "illegal instruction: the llama.cpp build uses CPU instructions this machine "
    "cannot run; rebuild it portably with `bash scripts/build_llama_cpp.sh`",
    signal.SIGKILL: "killed (out of memory, or by another process)",
    signal.SIGSEGV: "segmentation fault",
}


class ServerError(RuntimeError):
    """The local server did not start, or died; the message says how and shows its log tail."""


def describe_exit(returncode: int) -> str:
    """``-4`` -> ``signal 4 (SIGILL: illegal instruction ...)``; ``1`` -> ``exit status 1``."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return f"signal {-returncode}"
    hint = _SIGNAL_HINTS.get(sig)
    return f"signal {-returncode} ({sig.name}{': ' + hint if hint else ''})"


@dataclass
class LocalServer:
    """A server process on loopback: its ``/v1`` URL, process and log file."""

    url: str
    proc: subprocess.Popen
    log: Path
    api_key: str | None = None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError as err:
            return f"(no log: {err})"
        return "\n".join(text.splitlines()[-lines:])

    def death_report(self) -> str | None:
        """None while the process runs; else how it ended and its log tail."""
        code = self.proc.poll()
        if code is None:
            return None
        return (
            f"the server process (pid {self.proc.pid}) died with {describe_exit(code)}; "
            f"last lines of {self.log}:\n{self.log_tail()}"
        )

    def raise_if_dead(self) -> None:
        report = self.death_report()
        if report:
            raise ServerError(report)

    def _request(self, path: str, body: dict | None, timeout: float):
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")

    def wait_ready(self, limit_s: float) -> None:
        """Until ``GET /models`` answers; a process that exits meanwhile raises at once."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            self.raise_if_dead()
            try:
                self._request("/models", None, timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                time.sleep(0.5)
        raise ServerError(
            f"the server did not answer GET /models within {limit_s:.0f} s; "
            f"last lines of {self.log}:\n{self.log_tail()}"
        )

    def check_completion(self, model: str, timeout: float = 120.0) -> str:
        """One real chat completion (4 tokens); its text. Raises ServerError naming the cause."""
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "Say hi."}],
            "max_tokens": 4,
            "temperature": 0,
        }
        try:
            answer = self._request("/chat/completions", body, timeout=timeout)
            return answer["choices"][0]["message"]["content"] or ""
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, KeyError) as err:
            time.sleep(0.5)  # let a crashing process finish dying, so its signal is known
            self.raise_if_dead()
            raise ServerError(
                f"the server is up but its first chat completion failed ({err!r}); "
                f"last lines of {self.log}:\n{self.log_tail()}"
            ) from err


@contextlib.contextmanager
def serve(
    cmd: Sequence[str],
    port: int,
    model: str,
    api_key: str | None = None,
    log_path: str | Path | None = None,
    ready_s: float = 120.0,
) -> Iterator[LocalServer]:
    """Run ``cmd`` (a server listening on 127.0.0.1:``port``), wait until it serves one
    completion of ``model``, yield its handle, always stop it."""
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(suffix=".log")[1])
    with log.open("w") as out:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT)
    server = LocalServer(f"http://127.0.0.1:{port}/v1", proc, log, api_key)
    try:
        server.wait_ready(ready_s)
        server.check_completion(model, timeout=ready_s)
        yield server
    finally:
        stop(proc)


@contextlib.contextmanager
def embedded_server(
    threads: int = 1,
    api_key: str | None = None,
    n_ctx: int = 8192,
    log_path: str | Path | None = None,
    ready_s: float = 120.0,
) -> Iterator[LocalServer]:
    """llama-cpp-python's server on the embedded SmolLM2 GGUF, on a free loopback port."""
    folder, gguf = resolve_embedded_llm("embedded:smollm2-135m")
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(folder / gguf),
           "--model_alias", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", str(threads)]  # fmt: skip
    if api_key:
        cmd += ["--api_key", api_key]
    with serve(cmd, port, SERVED_NAME, api_key, log_path, ready_s) as server:
        yield server
