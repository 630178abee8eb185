"""The local-server harness reports how a server died (signal, log tail) instead of a generic
connection error. Real processes on loopback: tiny HTTP servers written for these tests that
mimic llama-cpp-python's failure modes (answer GET /models, then die on the first completion)."""

from __future__ import annotations

import signal
import sys
import textwrap

import pytest

from memarena.llm.local_server import ServerError, describe_exit, free_port, serve

FAKE_SERVER = textwrap.dedent(
    """
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    MODE = sys.argv[2]
    print("fake server: model loaded, system_info: AMX_INT8 = 1", flush=True)
    if MODE == "exit_at_start":
        sys.exit(3)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({"data": [{"id": "fake"}]})

        def do_POST(self):
            print("fake server: first matrix kernel", flush=True)
            if MODE == "sigill":
                os.kill(os.getpid(), signal.SIGILL)
            self._send({"choices": [{"message": {"content": "hi"}}]})

        def log_message(self, *args):
            pass

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def _fake(tmp_path, mode: str):
    script = tmp_path / "fake_server.py"
    script.write_text(FAKE_SERVER)
    port = free_port()
    cmd = [sys.executable, str(script), str(port), mode]
    return serve(cmd, port, "fake", log_path=tmp_path / "server.log", ready_s=30)


def test_a_server_that_dies_on_its_first_completion_fails_start_up_with_its_signal(tmp_path):
    with pytest.raises(ServerError) as err:
        with _fake(tmp_path, "sigill"):
            pass
    message = str(err.value)
    assert "signal 4 (SIGILL: illegal instruction" in message
    assert "scripts/build_llama_cpp.sh" in message
    assert "fake server: first matrix kernel" in message  # the log tail


def test_a_server_that_exits_at_start_reports_its_exit_status(tmp_path):
    with pytest.raises(ServerError, match="exit status 3") as err:
        with _fake(tmp_path, "exit_at_start"):
            pass
    assert "model loaded" in str(err.value)


def test_a_healthy_server_serves_and_is_stopped(tmp_path):
    with _fake(tmp_path, "ok") as server:
        assert server.death_report() is None
        assert server.check_completion("fake") == "hi"
        proc = server.proc
    assert proc.poll() == -signal.SIGTERM  # stopped by terminate() when the block ended


def test_death_report_of_a_server_killed_while_serving(tmp_path):
    with _fake(tmp_path, "ok") as server:
        server.proc.kill()
        server.proc.wait(timeout=10)
        report = server.death_report()
        with pytest.raises(ServerError):
            server.raise_if_dead()
    assert report.startswith(f"the server process (pid {server.proc.pid}) died with signal 9")


def test_describe_exit():
    assert describe_exit(0) == "exit status 0"
    assert describe_exit(-11).startswith("signal 11 (SIGSEGV")
