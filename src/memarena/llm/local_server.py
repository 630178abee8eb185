"""A real OpenAI-compatible server on loopback serving the embedded SmolLM2-135M GGUF:
llama-cpp-python's (``python -m llama_cpp.server``; extra ``server-test``). Used by the openai
engine's tests and ``benchmarks/openai_throughput.py``; handy to try ``backbone=openai_server``
on a laptop:

    with embedded_server() as url:   # http://127.0.0.1:<free port>/v1, model "smollm2-135m"
        ...

The server process is always stopped when the block ends (terminate, then kill).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from memarena.llm.embedded import resolve_embedded_llm

SERVED_NAME = "smollm2-135m"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, api_key: str | None, limit_s: float):
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(f"{url}/models", headers=headers)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {log.read_text()}")
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {limit_s:.0f} s: {log.read_text()}")


@contextlib.contextmanager
def embedded_server(
    threads: int = 1,
    api_key: str | None = None,
    n_ctx: int = 8192,
    log_path: str | Path | None = None,
    ready_s: float = 120.0,
) -> Iterator[str]:
    """Start the server on a free loopback port, yield its ``/v1`` base URL, always stop it."""
    folder, gguf = resolve_embedded_llm("embedded:smollm2-135m")
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(folder / gguf),
           "--model_alias", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", str(n_ctx), "--n_threads", str(threads)]  # fmt: skip
    if api_key:
        cmd += ["--api_key", api_key]
    log = Path(log_path) if log_path else Path(tempfile.mkstemp(suffix=".log")[1])
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        _wait_ready(url, proc, log, api_key, ready_s)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
