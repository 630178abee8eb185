"""How a run ends when it does not finish: a signal (SIGTERM from a Slurm preemption, SIGHUP
from a closed terminal) or a full disk.

- :class:`StopOnSignals` makes SIGTERM and SIGHUP raise :class:`Terminated` in the run's main
  thread, as Python makes SIGINT raise KeyboardInterrupt: the run's ``finally`` closes the
  invocation (``run_info.json`` status ``terminated``), finishes the logger and closes the
  models, and ``run.py`` exits with 128 + the signal number (143, 129). A signal that arrives
  while the run is closing is remembered, not raised, so the closing is never cut short.
- :func:`disk_full` finds a "no space left" / "quota exceeded" OSError behind an exception, and
  :class:`DiskFullError` is the one message the run then ends with.
- :func:`ending` is the ``status`` / ``outcome`` an invocation is closed with.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from memarena.core.errors import MemarenaError
from memarena.results.store import RUN_INFO, RunStore

log = logging.getLogger(__name__)

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class Terminated(BaseException):
    """The run was stopped by ``signum`` (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` turns it into an error episode)."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"terminated by {signal.Signals(self.signum).name}")

    @property
    def exit_status(self) -> int:
        """The shell's status of a process killed by the signal: 128 + its number."""
        return 128 + self.signum


class DiskFullError(MemarenaError):
    """No space (or no quota) left where the run writes."""


class StopOnSignals:
    """While held (in the main thread only: Python runs signal handlers there), SIGTERM and
    SIGHUP raise :class:`Terminated`; the previous handlers come back on exit. Inside
    :meth:`closing`, a signal is remembered instead of raised, and re-raised as
    :class:`Terminated` on exit if the run was ending normally (a sweep stops there)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._raising = True
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopOnSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()
        if exc_type is None and self.received is not None:
            raise Terminated(self.received)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is None:
            self.received = signum
        if self._raising:
            self._raising = False
            log.warning("memarena: %s received: closing the run", name)
            raise Terminated(signum)
        log.warning("memarena: %s received while the run is closing: closing first", name)

    @contextlib.contextmanager
    def closing(self) -> Iterator[None]:
        """A block (the run's clean-up) that a signal does not interrupt."""
        self._raising = False
        yield


def disk_full(exc: BaseException | None) -> OSError | None:
    """The ENOSPC / EDQUOT OSError that ``exc`` is or was caused by (Hydra wraps a
    constructor's error), else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def disk_full_error(err: OSError, run_dir: Path | None) -> DiskFullError:
    """The one message a run stopped by a full disk ends with: the folder and the fix."""
    written = Path(str(err.filename)) if err.filename else None
    folder = written.parent if written is not None else run_dir
    what = "no space left" if err.errno == errno.ENOSPC else "the disk quota is used up"
    where = f"the disk holding {folder}" if folder is not None else "the disk the run writes to"
    detail = f" (writing {written})" if written is not None else ""
    check = f" (`df -h {folder}`)" if folder is not None else ""
    return DiskFullError(
        f"memarena: {what} on {where}{detail}. The records written so far are kept and this "
        f"run's temporary files were removed. Free space there{check}, or point "
        "paths.results_dir (results) or paths.cache_dir (data, models, LLM call cache) to a "
        "disk with room, then rerun the same command: the run resumes where it stopped."
    )


def ending(exc: BaseException | None) -> tuple[str, str]:
    """``(status, outcome)`` of an invocation that ended with ``exc`` (None: it finished):
    status ``finished`` / ``terminated`` / ``interrupted`` / ``error``; the outcome says which
    signal or error."""
    if exc is None:
        return "finished", "finished"
    if isinstance(exc, Terminated):
        return "terminated", str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "interrupted"
    shown = disk_full(exc) or exc  # the OSError itself, not Hydra's wrapper around it
    return "error", f"{type(shown).__name__}: {shown}"[:500]


def quietly(what: str, action: Callable[[], object], cause: BaseException | None = None) -> None:
    """Run one clean-up step of a run that is ending; a failure is logged, never raised, so it
    neither hides the error that ended the run nor skips the steps after it. On a full disk
    (``cause``) a step that fails for the same reason is only noted: the run's one message
    already says so."""
    try:
        action()
    except Exception as err:
        if disk_full(err) is not None and disk_full(cause) is not None:
            log.info("%s: not done, the disk is full (%s)", what, err)
        else:
            log.warning("memarena: %s failed: %s: %s", what, type(err).__name__, err)


def close_invocation(store: RunStore, wall_s: float, exc: BaseException | None) -> None:
    """Remove the temporary files failed writes left (first: on a full disk that frees what
    they took) and close this process's entry in ``run_info.json`` as ``exc`` ended it."""
    status, outcome = ending(exc)
    quietly("removing temporary files", store.remove_temporary, exc)
    quietly(
        f"recording the end of this run in {store.dir / RUN_INFO}",
        lambda: store.end_invocation(wall_s, outcome, status),
        exc,
    )
