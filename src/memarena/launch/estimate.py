"""What a sweep will cost, before it runs (``scripts/estimate.py``).

For each job of a sweep (the experiment's ``hydra.sweeper.params`` and the command line's sweeps,
expanded as Hydra's basic sweeper does): episodes, LLM calls, prompt and completion tokens, and
from them GPU-hours (vLLM presets, at ``gpu_throughput``) or dollars (API presets, at
``api_prices``), both in ``conf/estimate.yaml``.

Measured, then scaled. One capped run per (method, env) cell (:func:`measure_cell`, with the
counting devices of :mod:`memarena.launch.measure`) gives, per task and per episode: acquisition
samples per train task, evaluation views (MemCo's agents), the agent's requests per step and per
episode, their prompt and reply tokens, and the memory method's own requests and tokens per
train task and per evaluation episode. A job's numbers are those rates times its task counts
(the official split sizes in ``official_tasks``, capped by its ``protocol.max_*_tasks``), its
``runs x repetitions`` and its step limit, as two bounds:

- ``low``: every episode as long as the expert's and every reply as long as the expert's action
  (a capable model without thinking; memory replies as 0 tokens);
- ``high``: every episode runs to the step limit, each step's prompt extended along the measured
  growth with the step index (up to ``protocol.history_steps``), every agent and memory reply
  at its ``max_tokens``.
"""

from __future__ import annotations

import itertools
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from memarena.core import ConfigError
from memarena.launch import measure

log = logging.getLogger(__name__)

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
MEASURING = [
    "backbone=scripted",
    "backbone._target_=memarena.launch.measure.CountingExpert",
    "memory_backbone=smollm2_135m",  # replaced by the counting LLM (compose_measuring)
    "embedder=minilm",
    "logger=none",
]
# job override keys the measuring run replaces (its models) or leaves out (where it goes)
_REPLACED = ("backbone", "memory_backbone", "embedder", "logger", "paths", "hydra")
# env keys that ask for official data, and what the measuring run sets them to (stand-in data)
_STAND_IN = {"require_data": "false", "task_list": "null", "train_task_list": "null",
             "dataset": "smoke", "train_source": "generated"}  # fmt: skip


def settings(overrides: Sequence[str] = ()) -> DictConfig:
    """``conf/estimate.yaml`` with ``estimate.<key>=<value>`` overrides applied."""
    cfg = OmegaConf.load(CONF_DIR / "estimate.yaml")
    dotlist = [o[len("estimate.") :] for o in overrides]
    for item in dotlist:
        key = item.split("=", 1)[0]
        if OmegaConf.select(cfg, key, default="<missing>") == "<missing>":
            raise ConfigError(
                f"memarena: estimate.{key} is not a key of conf/estimate.yaml; its keys: "
                f"{', '.join(cfg.keys())}."
            )
    return OmegaConf.merge(cfg, OmegaConf.from_dotlist(dotlist))


# --- the sweep's jobs ---------------------------------------------------------------------


def sweep_jobs(overrides: Sequence[str]) -> list[list[str]]:
    """The override list of every job of the sweep ``python run.py -m <overrides>`` runs: the
    config's ``hydra.sweeper.params`` with the command line's overrides taking their keys, in
    the order Hydra's basic sweeper launches them."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    import memarena.config_resolvers  # noqa: F401  (registers the resolvers conf/ uses)

    parser = OverridesParser.create()
    given = parser.parse_overrides(list(overrides))
    fixed = [o.input_line for o in given if not o.is_sweep_override()]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=_composable(fixed), return_hydra_config=True)
    params = cfg.hydra.sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if params is not None else {}
    axes: dict[str, list[str]] = {}
    for key, value in (params or {}).items():
        axes[key] = _values(parser, f"{key}={value}")
    for o in given:
        key = o.get_key_element()
        axes.pop(key, None)
        axes[key] = _values(parser, o.input_line) if o.is_sweep_override() else [o.input_line]
    rows = itertools.product(*axes.values())
    swept = [k for k in axes]
    jobs = []
    for row in rows:
        chosen = {k: v for k, v in zip(swept, row, strict=True)}
        jobs.append([o for o in fixed if o.split("=", 1)[0] not in chosen] + list(chosen.values()))
    return jobs


def _values(parser: Any, line: str) -> list[str]:
    override = parser.parse_override(line)
    key = line.split("=", 1)[0]
    if not override.is_sweep_override():
        return [line]
    return [f"{key}={v}" for v in override.sweep_string_iterator()]


def _composable(overrides: Sequence[str]) -> list[str]:
    """``group=null`` (which run.py takes) as Hydra's compose API takes it: ``~group``."""
    return [f"~{o[: -len('=null')]}" if o.endswith("=null") and "." not in o else o
            for o in overrides]  # fmt: skip


def compose_job(overrides: Sequence[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir

    import memarena.config_resolvers  # noqa: F401

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("config", overrides=_composable(overrides))


# --- measuring one cell ---------------------------------------------------------------------


@dataclass
class Measurement:
    """What one capped run of a cell counted (see the module docstring)."""

    cell: str
    acq_tasks: int = 0
    acq_episodes: int = 0
    eval_tasks: int = 0
    views: int = 1
    eval_episodes: int = 0
    calls: dict[str, list[int]] = field(default_factory=dict)  # measure.CALLS per phase
    steps: dict[str, int] = field(default_factory=dict)  # env steps per phase
    growth: dict[str, tuple[float, float]] = field(default_factory=dict)  # prompt = a + b*k
    memory: dict[str, list[int]] = field(default_factory=dict)  # phase: [requests, prompt, compl]
    wall_s: float = 0.0
    error: str | None = None


def measuring_overrides(job: Sequence[str], cfg: DictConfig, caps: DictConfig, out: Path):
    """The measuring run's overrides for the job ``job`` (composed: ``cfg``)."""
    keep = [o for o in job if o.split("=", 1)[0].lstrip("+~").split(".")[0] not in _REPLACED]
    train_cap = cfg.protocol.max_train_tasks
    train = caps.max_train_tasks if train_cap is None else min(int(train_cap), caps.max_train_tasks)
    eval_cap = cfg.protocol.max_eval_tasks
    evals = caps.max_eval_tasks if eval_cap is None else min(int(eval_cap), caps.max_eval_tasks)
    stand_in = [f"env.{k}={v}" for k, v in _STAND_IN.items() if cfg.env.get(k) not in (None, False)]
    return [
        *keep,
        *MEASURING,
        f"backbone.epsilon={caps.epsilon}",
        *stand_in,
        f"protocol.max_train_tasks={train}",
        f"protocol.max_eval_tasks={evals}",
        "protocol.runs=1",
        "protocol.repetitions=1",
        # a job that starts from another run's snapshot: the measuring run acquires its own
        # (not counted: scale() gives such a job no acquisition)
        *(["protocol.snapshot_from=null"] if cfg.protocol.get("snapshot_from") else []),
        f"paths.results_dir={out}",
    ]


def compose_measuring(overrides: Sequence[str]) -> DictConfig:
    """The measuring run's config: the memory method's LLM is the counting one."""
    cfg = compose_job(overrides)
    with open_dict(cfg):
        cfg.memory_backbone = {
            "_target_": f"{measure.__name__}.CountingLLM",
            "same_as_agent": False,
        }
    return cfg


def measure_cell(job: Sequence[str], cfg: DictConfig, caps: DictConfig, cell: str) -> Measurement:
    """Run the cell of ``job`` capped, with the counting devices, and read what it counted."""
    import time

    from memarena.pipeline import run
    from memarena.results import store as files

    out = Path(caps.results_dir) if caps.results_dir else Path(tempfile.mkdtemp(prefix="estimate-"))
    found = Measurement(cell=cell)
    measure.reset()
    t0 = time.perf_counter()
    try:
        measured = compose_measuring(measuring_overrides(job, cfg, caps, out))
        metrics = run(measured)
    except Exception as exc:  # reported in the table: the cell is not estimated
        found.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        return found
    finally:
        found.wall_s = time.perf_counter() - t0
    folder = next(p.parent for p in out.rglob(files.METRICS))
    store = files.RunStore(folder)
    acq = store.read_records(files.ACQUISITION)
    evals = store.read_records(files.EPISODES) + store.read_records(files.REFLECTIONS)
    found.acq_tasks = len({r.task_id for r in acq})
    found.acq_episodes = len(acq)
    found.eval_tasks = len({r.task_id for r in evals})
    found.views = max(1, len({r.agent for r in evals}))
    found.eval_episodes = len(evals)
    found.steps = {"acquire": sum(r.steps for r in acq), "eval": sum(r.steps for r in evals)}
    found.calls = {p: list(v) for p, v in measure.CALLS.items()}
    found.growth = {p: _growth(by_step) for p, by_step in measure.STEPS.items()}
    marker = files.snapshot_marker(folder / files.MEMORY_DIR) if store.snapshot_complete() else {}
    found.memory = {
        "acquire": _usage_total(marker.get("memory_usage")),
        "eval": _usage_total(metrics.get("eval_memory_usage")),
    }
    if not caps.results_dir:
        shutil.rmtree(out, ignore_errors=True)
    return found


def _usage_total(usage: dict[str, Any] | None) -> list[int]:
    """[requests, prompt tokens, completion tokens] of a ``{purpose: counters}`` usage."""
    total = [0, 0, 0]
    for u in (usage or {}).values():
        total[0] += int(u.get("requests", u.get("calls", 0)))
        total[1] += int(u.get("prompt_tokens", 0))
        total[2] += int(u.get("completion_tokens", 0))
    return total


def _growth(by_step: dict[int, list[int]]) -> tuple[float, float]:
    """(a, b) of the least-squares line prompt = a + b * step over the steps seen, weighted by
    how many requests each step had; b >= 0 (a prompt that shrinks is extended flat)."""
    points = [(k, v) for k, values in by_step.items() for v in values]
    n = len(points)
    if not n:
        return 0.0, 0.0
    mx = sum(k for k, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((k - mx) ** 2 for k, _ in points)
    b = sum((k - mx) * (v - my) for k, v in points) / sxx if sxx else 0.0
    b = max(0.0, b)
    return my - b * mx, b


# --- scaling to a job -----------------------------------------------------------------------


@dataclass
class JobEstimate:
    job: list[str]
    cell: str
    backbone: str  # the backbone's name
    episodes: int = 0
    calls: tuple[float, float] = (0.0, 0.0)  # (low, high)
    prompt: tuple[float, float] = (0.0, 0.0)
    completion: tuple[float, float] = (0.0, 0.0)
    cost: tuple[float, float] | None = None
    unit: str = ""  # "GPU-h" or "$"
    note: str = ""


def official_count(cfg: DictConfig, table: DictConfig, split: str) -> int | None:
    """Tasks of ``split`` on the env's official data (``official_tasks``), None when unlisted."""
    env = str(cfg.env._target_).rsplit(".", 2)[-2]  # memarena.envs.<env>.<Class>
    entry = (table.get(env) or {}).get("test" if split != "train" else "train")
    if isinstance(entry, DictConfig):
        return int(entry["values"][str(cfg.env.get(entry["key"]))])
    return None if entry is None else int(entry)


def step_limit(cfg: DictConfig) -> int:
    p = cfg.protocol
    return int((p.get("step_budget_by_method") or {}).get(cfg.method.name, p.step_budget)
               or cfg.env.step_budget)  # fmt: skip


def scale(m: Measurement, cfg: DictConfig, job: list[str], est: DictConfig) -> JobEstimate:
    """The job's episodes, calls and tokens from the cell's measurement (module docstring)."""
    out = JobEstimate(job=job, cell=m.cell, backbone=str(cfg.backbone.name))
    if m.error:
        out.note = f"not measured: {m.error}"
        return out
    p = cfg.protocol
    train = official_count(cfg, est.official_tasks, str(p.train_split))
    test = official_count(cfg, est.official_tasks, str(p.eval_split))
    if test is None:
        out.note = "no official_tasks entry for this env in conf/estimate.yaml"
        return out
    if p.max_train_tasks is not None:
        train = min(train or 0, int(p.max_train_tasks))
    if p.get("snapshot_from"):  # evaluation starts from another run's memory: no acquisition
        train = 0
    if p.max_eval_tasks is not None:
        test = min(test, int(p.max_eval_tasks))
    runs = int(p.runs) * int(p.repetitions)
    limit = step_limit(cfg)
    history = p.get("history_steps")
    phases = {
        "acquire": (
            (train or 0) * m.acq_episodes / m.acq_tasks if m.acq_tasks else 0.0,
            m.acq_episodes,
            (train or 0) / m.acq_tasks if m.acq_tasks else 0.0,  # memory calls scale per task
        ),
        "eval": (
            test * m.views * runs * m.eval_episodes / max(1, m.eval_tasks * m.views),
            m.eval_episodes,
            0.0,
        ),
    }
    episodes = calls_lo = calls_hi = pr_lo = pr_hi = co_lo = co_hi = 0.0
    for phase, (n_episodes, measured_episodes, per_task) in phases.items():
        episodes += n_episodes
        requests, prompt, reply, max_tokens = m.calls.get(phase, [0, 0, 0, 0])
        if measured_episodes and requests:
            ratio = n_episodes / measured_episodes
            per_step = requests / max(1, m.steps.get(phase, 0))
            a, b = m.growth.get(phase, (prompt / requests, 0.0))
            steps = range(limit)
            span = [a + b * (min(k, history) if history else k) for k in steps]
            calls_lo += requests * ratio
            calls_hi += n_episodes * limit * per_step
            pr_lo += prompt * ratio
            pr_hi += n_episodes * per_step * sum(span)
            co_lo += reply * ratio
            co_hi += n_episodes * limit * per_step * max_tokens
        mem = m.memory.get(phase, [0, 0, 0])
        if mem[0]:
            ratio = per_task if phase == "acquire" else n_episodes / max(1, measured_episodes)
            calls_lo += mem[0] * ratio
            calls_hi += mem[0] * ratio
            pr_lo += mem[1] * ratio
            pr_hi += mem[1] * ratio
            co_hi += mem[2] * ratio  # the counting LLM books each reply at its max_tokens
    out.episodes = round(episodes)
    out.calls, out.prompt, out.completion = (calls_lo, calls_hi), (pr_lo, pr_hi), (co_lo, co_hi)
    out.cost, out.unit, note = price(cfg, out, est)
    out.note = note
    return out


def price(cfg: DictConfig, job: JobEstimate, est: DictConfig):
    """(low, high) GPU-hours or dollars of the job's tokens, the unit, a note."""
    name = str(cfg.backbone.name)
    rate = est.gpu_throughput.get(name)
    if rate is not None:
        gpus = int(cfg.backbone.get("tensor_parallel_size") or 1)

        def hours(prompt: float, completion: float) -> float:
            seconds = prompt / rate.prefill_tokens_per_s + completion / rate.decode_tokens_per_s
            return gpus * seconds / 3600

        low = hours(job.prompt[0], job.completion[0])
        return (low, hours(job.prompt[1], job.completion[1])), "GPU-h", ""
    cost = est.api_prices.get(name)
    if cost is not None:

        def dollars(prompt: float, completion: float) -> float:
            return (prompt * cost.input_per_mtok + completion * cost.output_per_mtok) / 1e6

        low = dollars(job.prompt[0], job.completion[0])
        return (low, dollars(job.prompt[1], job.completion[1])), "$", ""
    if "scripted" in name:
        return None, "", "the scripted expert: no model cost"
    return None, "", f"no gpu_throughput or api_prices entry for {name} in conf/estimate.yaml"


# --- the whole sweep --------------------------------------------------------------------------


def cell_of(cfg: DictConfig) -> str:
    return f"{cfg.method.name} / {cfg.env.name}"


# protocol keys the estimate scales by (so cells that differ only in them share a measurement)
_SCALED = ("max_train_tasks", "max_eval_tasks", "runs", "repetitions", "step_budget",
           "step_budget_by_method")  # fmt: skip


def measurement_key(cfg: DictConfig) -> str:
    """Jobs with equal keys share one measuring run: same method, env and protocol (but for
    what is scaled: caps, runs, step limits)."""
    protocol = {k: v for k, v in OmegaConf.to_container(cfg.protocol).items() if k not in _SCALED}
    return f"{cell_of(cfg)} {sorted(protocol.items())!r}"


def estimate(
    overrides: Sequence[str], est: DictConfig, measured: dict[str, Measurement] | None = None
) -> list[JobEstimate]:
    """Every job of the sweep, estimated; one measuring run per (method, env, protocol) cell
    (``measured``: measurements to reuse and add to, e.g. across experiments)."""
    measured = {} if measured is None else measured
    out = []
    for job in sweep_jobs(overrides):
        cfg = compose_job(job)
        key = measurement_key(cfg)
        if key not in measured:
            log.info("measuring %s (%s)", cell_of(cfg), " ".join(job))
            measured[key] = measure_cell(job, cfg, est.measure, cell_of(cfg))
        out.append(scale(measured[key], cfg, job, est))
    return out


def paper_experiments(papers: Sequence[str]) -> list[str]:
    """The experiment files that feed a table or figure of one of ``papers`` (``report.paper``)."""
    out = []
    for path in sorted((CONF_DIR / "experiment").glob("*.yaml")):
        cfg = compose_job([f"experiment={path.stem}"])
        if OmegaConf.select(cfg, "report.paper") in papers:
            out.append(path.stem)
    return out


def paper_table(results: dict[str, list[JobEstimate]]) -> str:
    """Markdown, one row per experiment: jobs, per-job means, the sweep's cost."""
    lines = [
        "| experiment | jobs | episodes per job | LLM calls per job | prompt tokens per job "
        "| completion tokens per job | GPU-hours (vLLM presets) | dollars (API presets) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in results.items():
        done = [r for r in rows if r.episodes]
        missing = sorted({r.cell for r in rows if not r.episodes})
        if not done:
            lines.append(f"| `{name}` | {len(rows)} | {rows[0].note} | | | | | |")
            continue

        def mean(pick, done=done) -> tuple[float, float]:
            return (sum(pick(r)[0] for r in done) / len(done),
                    sum(pick(r)[1] for r in done) / len(done))  # fmt: skip

        def cost(unit: str, done=done) -> str:
            picked = [r.cost for r in done if r.unit == unit]
            if not picked:
                return "·"
            return _money_range(sum(c[0] for c in picked), sum(c[1] for c in picked), unit)

        episodes = sorted({r.episodes for r in done})
        spread = f"{_n(episodes[0])}" + (f"-{_n(episodes[-1])}" if len(episodes) > 1 else "")
        note = (
            f" ({len(rows) - len(done)} jobs not measured: {', '.join(missing)})" if missing else ""
        )
        lines.append(
            f"| `{name}` | {len(rows)}{note} | {spread} | {_range(mean(lambda r: r.calls))} | "
            f"{_range(mean(lambda r: r.prompt))} | {_range(mean(lambda r: r.completion))} | "
            f"{cost('GPU-h')} | {cost('$')} |"
        )
    return "\n".join(lines)


def _n(x: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.3g}{unit}"
    return f"{x:.3g}" if x else "0"


def _range(pair: tuple[float, float]) -> str:
    return f"{_n(pair[0])}-{_n(pair[1])}"


def table(rows: Sequence[JobEstimate]) -> str:
    """One line per (cell, backbone) group of jobs: jobs, per-job numbers, the group's cost;
    the cells not estimated, and why, below."""
    groups: dict[tuple[str, str], list[JobEstimate]] = {}
    for row in rows:
        groups.setdefault((row.cell, row.backbone), []).append(row)
    head = ("cell (method / env measured on)", "backbone", "jobs", "episodes/job",
            "LLM calls/job", "prompt tok/job", "completion tok/job",
            "cost of these jobs")  # fmt: skip
    lines, notes = [head], {}
    totals: dict[str, list[float]] = {}
    for (cell, backbone), group in groups.items():
        first = group[0]
        if not first.episodes:
            notes[cell] = first.note
            lines.append((cell, backbone, str(len(group)), "-", "-", "-", "-", "not estimated"))
            continue
        cost = first.note
        if first.cost is not None:
            lo, hi = sum(r.cost[0] for r in group), sum(r.cost[1] for r in group)
            total = totals.setdefault(first.unit, [0.0, 0.0])
            total[0] += lo
            total[1] += hi
            cost = _money_range(lo, hi, first.unit)
        lines.append((cell, backbone, str(len(group)), str(first.episodes), _range(first.calls),
                      _range(first.prompt), _range(first.completion), cost))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]
    summary = [f"jobs: {len(rows)}"]
    summary += [f"total {_money_range(lo, hi, unit)}" for unit, (lo, hi) in totals.items()]
    text.append("; ".join(summary) + " (low-high: see scripts/estimate.py --help)")
    text += [f"not estimated: {cell}: {note}" for cell, note in notes.items()]
    return "\n".join(text)


def _money_range(lo: float, hi: float, unit: str) -> str:
    if unit == "$":
        return f"${lo:,.2f}-{hi:,.2f}"
    return f"{lo:,.1f}-{hi:,.1f} GPU-h"
