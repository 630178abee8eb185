"""Local server processes: a free loopback port, and stopping a child process politely (the
tests' llama.cpp server, AppWorld's environment servers)."""

from __future__ import annotations

import socket
import subprocess

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port the OS reports free on the loopback interface now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """Terminate ``proc`` (when still running), then kill it if it has not exited after
    ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
