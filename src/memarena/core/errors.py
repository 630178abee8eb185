"""Errors that reach the user as one readable paragraph instead of a traceback."""

from __future__ import annotations


class MemarenaError(Exception):
    """Base class: the message says what is wrong and how to fix it. ``transient``: the
    cause may go away by itself (a server restarting); a sweep job on a cluster launcher
    retries it with back-off (``hydra.launcher.retries``)."""

    transient = False


class ConfigError(MemarenaError):
    """A bad configuration value, missing data or a missing optional dependency."""


class MemoryFrozenError(MemarenaError):
    """``observe`` was called on a frozen memory."""


class ServerUnreachableError(MemarenaError):
    """Every request of several consecutive batches failed: the LLM server is down or
    unreachable (``protocol.max_failed_batches``)."""

    transient = True
