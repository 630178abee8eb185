"""Progress through long phases without spamming logs.

Two helpers, shared by every phase that can run for more than a few seconds:

- :class:`Progress` counts items of a known total (household games generated, snapshot entries
  loaded, global records rebuilt). On a terminal it is a tqdm bar (redrawn at most once a
  second); in a log file (stderr not a TTY) it writes one line with the elapsed time and the
  ETA at each tenth of the total. A phase shorter than ``quiet_s`` shows nothing either way
  (the bar appears only once that much time has passed).
- :func:`heartbeat` wraps one blocking batched call (a memory LLM's summarisation,
  maintenance or controller requests go to the engine as one batch, which reports nothing
  until it ends). Past ``interval_s`` it logs how long the call has run and an ETA from the
  seconds per request that earlier calls of the same kind took; a call shorter than
  ``interval_s`` writes nothing.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

log = logging.getLogger("memarena.progress")

LOG_STEPS = 10  # non-TTY: one line per tenth of the total
QUIET_S = 5.0  # phases shorter than this write no progress lines
HEARTBEAT_S = 15.0  # a blocking call logs every this many seconds
_RATES: dict[str, float] = {}  # seconds per request of earlier calls, by kind
_RATES_LOCK = threading.Lock()


def fmt_seconds(seconds: float) -> str:
    """``75`` -> ``1m15s``; ``3725`` -> ``1h02m05s``."""
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def is_tty(stream: Any = None) -> bool:
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


class Progress:
    """Count ``total`` items of the phase ``desc``; use as a context manager or call close()."""

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        unit: str = "it",
        tty: bool | None = None,
        quiet_s: float = QUIET_S,
        logger: logging.Logger = log,
        disable: bool = False,
    ) -> None:
        self.total = max(0, int(total))
        self.desc = desc
        self.unit = unit
        self.n = 0
        self.quiet_s = quiet_s
        self.log = logger
        self.t0 = time.monotonic()
        self._next_step = 1
        self.tty = is_tty() if tty is None else tty
        self.disable = disable
        self.bar: Any = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.disable:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        if self.tty:
            if self.elapsed() >= self.quiet_s:
                self.bar = tqdm(total=self.total, initial=self.n, desc=self.desc, unit=self.unit,
                                mininterval=1.0, leave=False)  # fmt: skip
            return
        if not self.total:
            return
        step = self.n * LOG_STEPS // self.total
        if step < self._next_step:
            return
        self._next_step = step + 1
        elapsed = self.elapsed()
        if elapsed < self.quiet_s:
            return
        left = elapsed / self.n * (self.total - self.n) if self.n else 0.0
        self.log.info(
            "%s: %d/%d %s (%d%%), %s elapsed, ETA %s",
            self.desc,
            self.n,
            self.total,
            self.unit,
            100 * self.n // self.total,
            fmt_seconds(elapsed),
            fmt_seconds(left),
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
            return
        elapsed = self.elapsed()
        if (
            not self.disable and not self.tty and elapsed >= self.quiet_s and self.n < self.total
        ):  # stopped early
            self.log.info("%s: %d/%d %s in %s", self.desc, self.n, self.total, self.unit,
                          fmt_seconds(elapsed))  # fmt: skip


class Heartbeat:
    """The timing of one blocking call: its start on ``clock``, the seconds per request that
    earlier calls of its ``kind`` took, the "still running" line and the rate it learns."""

    def __init__(
        self,
        kind: str,
        n_requests: float,
        *,
        unit: str = "request(s)",
        logger: logging.Logger = log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind, self.n_requests, self.unit = kind, n_requests, unit
        self.log, self.clock = logger, clock
        self.t0 = clock()
        with _RATES_LOCK:
            self.rate = _RATES.get(kind)

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def beat(self) -> None:
        """Log that the call is still running, with an ETA when an earlier call set a rate."""
        elapsed = self.elapsed()
        eta = ""
        if self.rate is not None:
            left = self.rate * self.n_requests - elapsed
            eta = (f", ETA {fmt_seconds(left)}" if left > 0 else ", ETA overdue") + (
                f" ({self.rate:.2f}s per {self.unit.removesuffix('(s)')} in earlier calls)"
            )
        self.log.info("%s: %s %s running for %s%s", self.kind, self.n_requests, self.unit,
                      fmt_seconds(elapsed), eta)  # fmt: skip

    def finish(self, interval_s: float) -> None:
        """Learn this call's seconds per request (the mean with the earlier rate); log the end
        of a call that ran at least ``interval_s``."""
        elapsed = self.elapsed()
        if self.n_requests:
            with _RATES_LOCK:
                old = _RATES.get(self.kind)
                new = elapsed / self.n_requests
                _RATES[self.kind] = new if old is None else 0.5 * old + 0.5 * new
        if elapsed >= interval_s:
            self.log.info("%s: %s %s done in %s", self.kind, self.n_requests, self.unit,
                          fmt_seconds(elapsed))  # fmt: skip


@contextmanager
def heartbeat(
    kind: str,
    n_requests: float,
    *,
    unit: str = "request(s)",
    interval_s: float = HEARTBEAT_S,
    logger: logging.Logger = log,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Heartbeat]:
    """Log, every ``interval_s`` while the block runs, that ``n_requests`` requests of ``kind``
    are still running, with an ETA from earlier calls of that kind; learn this call's rate.

    The elapsed times, the ETA and the learned rate read ``clock`` (tests pass a fake one and
    call the yielded :meth:`Heartbeat.beat` themselves); the beat thread waits ``interval_s``
    of real time between lines."""
    hb = Heartbeat(kind, n_requests, unit=unit, logger=logger, clock=clock)
    done = threading.Event()

    def beat() -> None:
        while not done.wait(interval_s):
            hb.beat()

    thread = threading.Thread(target=beat, name=f"heartbeat-{kind}", daemon=True)
    thread.start()
    try:
        yield hb
    finally:
        done.set()
        thread.join()
        hb.finish(interval_s)
