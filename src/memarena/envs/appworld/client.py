"""A small HTTP client for AppWorld's environment server (``appworld serve environment``).

The server (``appworld/serve/environment.py`` of ``appworld==0.1.3.post1``) holds one world
at a time and wraps every answer as ``{"output": ...}``:

- ``POST /initialize`` ``{task_id, experiment_name, max_interactions, ...}`` ->
  ``{task_id, instruction, supervisor: {first_name, last_name, email, phone_number}, datetime}``
- ``POST /execute`` ``{task_id, code}`` -> the printed output (str)
- ``POST /task_completed`` ``{task_id}`` -> bool
- ``POST /evaluate`` ``{task_id, suppress_errors}`` -> ``{success, difficulty, num_tests,
  passes, failures}``
- ``POST /save_logs``, ``/close``, ``/close_all`` ``{task_id}``; ``GET /`` a welcome message.

A server-side exception comes back as HTTP 500 with the body ``Internal Server Error``; the
exception itself is only in the server's log, so :class:`AppWorldClient` takes a ``log_tail``
callable and puts the log's last lines into the error it raises.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from memarena.core.errors import MemarenaError


class AppWorldServerError(MemarenaError):
    """The AppWorld server failed a request, or did not answer."""

    transient = True


class AppWorldClient:
    """Calls one AppWorld environment server at ``base_url`` (``http://127.0.0.1:PORT``)."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 300.0,
        log_tail: Callable[[], str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self._log_tail = log_tail or (lambda: "")

    # -- transport ---------------------------------------------------------------------------
    def _request(self, path: str, body: dict[str, Any] | None = None, timeout: float | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base_url + path,
            data=data,
            method="GET" if body is None else "POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                payload = json.loads(response.read().decode() or "null")
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")[:500]
            raise AppWorldServerError(
                f"AppWorld server {self.base_url}{path} answered HTTP {exc.code}: {text}"
                + self._tail()
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise AppWorldServerError(
                f"AppWorld server {self.base_url}{path} did not answer: {reason}" + self._tail()
            ) from None
        if isinstance(payload, dict) and "output" in payload:
            return payload["output"]
        return payload

    def _tail(self) -> str:
        tail = self._log_tail().strip()
        return f"\nserver log (last lines):\n{tail}" if tail else ""

    # -- endpoints ---------------------------------------------------------------------------
    def alive(self, timeout: float = 2.0) -> bool:
        try:
            self._request("/", timeout=timeout)
            return True
        except AppWorldServerError:
            return False

    def initialize(self, task_id: str, **options: Any) -> dict[str, Any]:
        return self._request("/initialize", {"task_id": task_id, **options})

    def execute(self, task_id: str, code: str) -> str:
        output = self._request("/execute", {"task_id": task_id, "code": code})
        return output if isinstance(output, str) else json.dumps(output)

    def task_completed(self, task_id: str) -> bool:
        return bool(self._request("/task_completed", {"task_id": task_id}))

    def evaluate(self, task_id: str) -> dict[str, Any]:
        # suppress_errors: a failing test is a failure in the report, not a server error
        return self._request("/evaluate", {"task_id": task_id, "suppress_errors": True})

    def save_logs(self, task_id: str) -> Any:
        return self._request("/save_logs", {"task_id": task_id})

    def close(self, task_id: str) -> Any:
        return self._request("/close", {"task_id": task_id})

    def close_all(self, task_id: str) -> Any:
        return self._request("/close_all", {"task_id": task_id})
