"""Progress through long phases (issue 22 item 2): log lines with an ETA outside a terminal,
nothing for short phases, a heartbeat around one blocking batched call, and the phases that
use them (household suite generation, memory-LLM calls, MemCo's global rebuild)."""

from __future__ import annotations

import logging
import threading

from needs import need_module

from memarena.core import progress as prog
from memarena.core.progress import Progress, fmt_seconds, heartbeat


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "memarena.progress"]


def test_fmt_seconds():
    assert [fmt_seconds(s) for s in (0, 59.6, 75, 3725)] == ["0s", "1m00s", "1m15s", "1h02m05s"]


def test_non_tty_progress_logs_each_tenth_with_an_eta(caplog):
    caplog.set_level(logging.INFO, logger="memarena.progress")
    with Progress(100, "suite", unit="games", tty=False, quiet_s=0.0) as bar:
        for _ in range(100):
            bar.update()
    lines = _lines(caplog)
    assert len(lines) == 10  # 10%, 20%, ..., 100%: never one line per item
    assert lines[0].startswith("suite: 10/100 games (10%),") and "ETA" in lines[0]
    assert lines[-1].startswith("suite: 100/100 games (100%),")


def test_short_phases_write_nothing(caplog):
    caplog.set_level(logging.INFO, logger="memarena.progress")
    for tty in (False, True):
        with Progress(1000, "quick", tty=tty) as bar:  # default quiet_s: 5 s
            for _ in range(1000):
                bar.update()
            assert bar.bar is None  # on a terminal the bar appears only after quiet_s
    assert _lines(caplog) == []


class FakeClock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_heartbeat_logs_a_long_call_with_an_eta_from_earlier_calls(caplog):
    caplog.set_level(logging.INFO, logger="memarena.progress")
    kind = "test kind (memory LLM)"
    prog._RATES.pop(kind, None)
    clock = FakeClock()
    # interval 60 s: the beat thread waits 60 s of real time, which these blocks never take, so
    # the test beats by hand at the fake times it chooses
    with heartbeat(kind, 4, interval_s=60, clock=clock) as hb:
        clock.now += 90
        hb.beat()
        clock.now += 30
    # first call of the kind: no ETA; it ran 120 s for 4 requests -> 30 s per request
    assert _lines(caplog) == [
        f"{kind}: 4 request(s) running for 1m30s",
        f"{kind}: 4 request(s) done in 2m00s",
    ]
    assert prog._RATES[kind] == 30.0
    caplog.clear()
    with heartbeat(kind, 4, interval_s=60, clock=clock) as hb:
        clock.now += 70
        hb.beat()  # 4 x 30 s expected, 70 s gone -> ETA 50 s
        clock.now += 60
        hb.beat()  # 130 s > 120 s: overdue
        clock.now += 10
    per = "(30.00s per request in earlier calls)"
    assert _lines(caplog) == [
        f"{kind}: 4 request(s) running for 1m10s, ETA 50s {per}",
        f"{kind}: 4 request(s) running for 2m10s, ETA overdue {per}",
        f"{kind}: 4 request(s) done in 2m20s",
    ]
    assert prog._RATES[kind] == 0.5 * 30.0 + 0.5 * 140 / 4  # the mean with the earlier rate
    caplog.clear()
    with heartbeat(kind, 4, interval_s=60, clock=clock):  # shorter than the interval: silent
        clock.now += 59
    assert _lines(caplog) == []
    prog._RATES.pop(kind, None)


def test_heartbeat_thread_beats_every_interval_on_the_injected_clock():
    """The beat thread itself: it logs at the real interval, with the injected clock's time."""
    kind = "test kind (thread)"
    prog._RATES.pop(kind, None)
    seen, lines = threading.Event(), []

    class Handler(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
            seen.set()

    logger = logging.getLogger("memarena.progress.test-thread")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = Handler()
    logger.addHandler(handler)
    times = iter([1000.0])  # the start; every later reading is 30 s on
    try:
        with heartbeat(kind, 2, interval_s=0.001, logger=logger, clock=lambda: next(times, 1030.0)):
            assert seen.wait(30), "the beat thread logged nothing"
    finally:
        logger.removeHandler(handler)
    # every beat read the fake clock (30 s in); the end line and the rate as well
    assert set(lines[:-1]) == {f"{kind}: 2 request(s) running for 30s"}
    assert lines[-1] == f"{kind}: 2 request(s) done in 30s"
    assert prog._RATES.pop(kind) == 15.0


def test_json_batch_runs_under_a_heartbeat(monkeypatch):
    from memarena.core import ChatRequest, Completion
    from memarena.memory import llm_calls

    seen = []

    class Recorder:
        def __init__(self, kind, n, **_):
            seen.append((kind, n))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    class LLM:
        def generate(self, requests):
            return [Completion(text='{"a": 1}') for _ in requests]

    monkeypatch.setattr(llm_calls, "heartbeat", Recorder)
    requests = [ChatRequest(messages=[]) for _ in range(3)]
    out = llm_calls.json_batch(LLM(), requests, usage={}, fallbacks={}, kind="reme_summary")
    assert out == [{"a": 1}] * 3
    assert seen == [("memory LLM reme_summary", 3)]


class _Counting:
    """A Progress stand-in that records its total and updates."""

    made: list[_Counting] = []

    def __init__(self, total, desc, **_):
        self.total, self.desc, self.n, self.closed = total, desc, 0, False
        _Counting.made.append(self)

    def update(self, n=1):
        self.n += n

    def close(self):
        self.closed = True


def test_memco_global_rebuild_counts_every_record(monkeypatch):
    from memarena.memory.memco import global_memory

    _Counting.made = []
    monkeypatch.setattr(global_memory, "Progress", _Counting)
    global_memory.rebuild({})
    (bar,) = _Counting.made
    assert (bar.desc, bar.total, bar.n, bar.closed) == ("memco global rebuild", 0, 0, True)


def test_household_suite_generation_reports_each_game(monkeypatch, tmp_path, caplog):
    need_module("textworld")
    from memarena.envs.alfworld import generator as gen
    from memarena.envs.alfworld.scenes import TASK_TYPES

    _Counting.made = []
    monkeypatch.setattr(gen, "Progress", _Counting)
    caplog.set_level(logging.INFO, logger=gen.log.name)
    spec = gen.SuiteSpec(("bathroom",), tuple(TASK_TYPES), 2, 1, 0, 3, 1, 5, 30)
    gen.generate_suite(spec, tmp_path, workers=1)
    (bar,) = _Counting.made
    assert (bar.desc, bar.total, bar.n, bar.closed) == ("household suite", 3, 3, True)
    assert any("generating the household suite (3 games" in r.getMessage() for r in caplog.records)
