"""The pre-flight of a whole sweep: every job's config checked before any job starts.

A job that would die on its first line (the official data missing, an API key not exported, a
package not installed, a ``protocol.snapshot_from`` run not made yet) is found here, for every
cell of the sweep, and the sweep is refused with one report: each problem once, with the jobs it
affects. ``run.py`` runs it before Hydra starts any launcher (basic, joblib, submitit_local, Ray,
Slurm); the Slurm dry run prints the same report under its plan
(:mod:`memarena.launch.slurm`).

What is checked, per job (its composed config):

- **composition**: the job's overrides compose (a sweep's later values are checked here);
- **data**: the env is built as the job would build it (its constructor checks
  ``env.require_data`` and the data paths it is given; a local Wikipedia is checked by its path,
  its index is the job's work);
- **API keys**: every node with an ``api_key_env`` (``backbone``, ``memory_backbone``) names a
  variable set in this shell (the jobs inherit it);
- **packages**: what the job's parts import (:data:`NEEDS`, by ``_target_``) and the launcher's
  (:data:`LAUNCHER_NEEDS`) can be found (never imported: vLLM takes seconds);
- **snapshot_from**: the run or released file it names exists and holds a complete snapshot.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.core import MemarenaError

VLLM_HINT = (
    "install the vllm extra on the GPU machine: pip install -e '.[vllm]' (docs/setup.md, "
    "'GPU install'), or serve the model (scripts/serve.py) and use backbone=openai_server"
)

# _target_ prefix -> (the modules the part imports, how to install them)
NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "memarena.llm.vllm_engine.": (("vllm",), VLLM_HINT),
    "memarena.llm.openai_engine.": (("openai",), 'pip install "openai>=1.40,<4"'),
    "memarena.envs.alfworld.": (
        ("alfworld", "textworld"),
        "pip install alfworld==0.4.2 'textworld[pddl]==1.7.0' (scripts/setup.sh installs them)",
    ),
    "memarena.envs.scienceworld.": (
        ("scienceworld",),
        "pip install scienceworld==1.2.3 (and Java 17 on PATH)",
    ),
    "memarena.envs.bfcl.": (("bfcl_eval",), "scripts/setup.sh installs bfcl-eval"),
    "memarena.memory.langmem.": (
        ("langmem", "langgraph", "trustcall"),
        "pip install -e '.[langmem]'",
    ),
}

# hydra.launcher._target_ prefix -> (modules, how to install them)
LAUNCHER_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "hydra_plugins.hydra_joblib_launcher.": (("joblib",), "pip install hydra-joblib-launcher"),
    "hydra_plugins.hydra_submitit_launcher.": (
        ("submitit",),
        "pip install hydra-submitit-launcher",
    ),
    "hydra_plugins.memarena_launchers.MemarenaSlurm": (
        ("submitit",),
        "pip install hydra-submitit-launcher",
    ),
    "hydra_plugins.memarena_launchers.MemarenaRay": (("ray",), "pip install -e '.[ray]'"),
}

RAY_PLUGIN = "hydra_plugins.hydra_ray_launcher"


def importable(module: str) -> bool:
    """Whether ``module`` can be found (its spec; nothing is imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def launcher_missing(
    choice: str | None, can_import: Callable[[str], bool] | None = None
) -> str | None:
    """The message for ``launcher=ray`` without the Ray launcher installed (Hydra would say only
    "Could not find 'hydra/launcher/memarena_ray'"), else None."""
    if choice != "ray" or (can_import or importable)(RAY_PLUGIN):
        return None
    return (
        "memarena: launcher=ray needs the Ray launcher (hydra-ray-launcher and Ray), which is not "
        "installed in this environment. Install it with: pip install -e '.[ray]' (or pip install "
        "'hydra-ray-launcher>=1.2'), then rerun. Without Ray: launcher=joblib (parallel "
        "processes on this machine), launcher=submitit_local or launcher=slurm."
    )


@dataclass
class Report:
    """The problems found, each once, with the jobs it affects (in order). ``cells``: each job's
    name -> its swept overrides (to name a set of jobs by what they share)."""

    n_jobs: int = 0
    problems: dict[str, list[str]] = field(default_factory=dict)
    cells: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def add(self, problem: str, job: str) -> None:
        jobs = self.problems.setdefault(problem.strip(), [])
        if job not in jobs:
            jobs.append(job)

    def jobs_text(self, jobs: list[str]) -> str:
        """``every job``, ``the 21 jobs with backbone=gpt_4o_mini`` (what exactly they share),
        or the jobs named (the first 6 of a longer list)."""
        if len(jobs) == self.n_jobs and self.n_jobs > 1:
            return "every job"
        if len(jobs) > 1 and all(j in self.cells for j in jobs):
            common = set.intersection(*(set(self.cells[j]) for j in jobs))
            alike = [j for j, cell in self.cells.items() if common <= set(cell)]
            if common and set(alike) == set(jobs):
                shared = " ".join(o for o in self.cells[jobs[0]] if o in common)
                return f"the {len(jobs)} jobs with {shared}"
        shown = "; ".join(jobs[:6])
        return shown + (f"; ... ({len(jobs)} jobs in all)" if len(jobs) > 6 else "")

    def text(self) -> str:
        if not self.problems:
            return ""
        n = len(self.problems)
        lines = [
            f"memarena: pre-flight of the sweep's {self.n_jobs} job(s) found {n} problem"
            f"{'' if n == 1 else 's'}; no job was started. Fix each, then rerun the same command."
        ]
        for k, (problem, jobs) in enumerate(self.problems.items(), 1):
            body = problem.removeprefix("memarena: ").replace("\n", "\n     ")
            lines.append(f"  {k}. {body}")
            lines.append(f"     jobs: {self.jobs_text(jobs)}")
        return "\n".join(lines)


def _walk(node: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    """(dotted path, node) for every mapping in ``node``, ``node`` included."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def _plain(cfg: DictConfig) -> dict[str, Any]:
    body = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    try:
        return OmegaConf.to_container(body, resolve=True)  # type: ignore[return-value]
    except Exception:  # noqa: BLE001 (an interpolation only the job can resolve)
        return OmegaConf.to_container(body, resolve=False)  # type: ignore[return-value]


def missing_packages(cfg: DictConfig, can_import: Callable[[str], bool] | None = None) -> list[str]:
    """One message per part of the job whose modules cannot be found."""
    can_import = can_import or importable
    out = []
    targets = [(p, n["_target_"]) for p, n in _walk(_plain(cfg)) if "_target_" in n]
    launcher = OmegaConf.select(cfg, "hydra.launcher._target_", default=None)
    table = [(p, t, NEEDS) for p, t in targets]
    if launcher:
        table.append(("hydra.launcher", str(launcher), LAUNCHER_NEEDS))
    for path, target, needs in table:
        for prefix, (modules, hint) in needs.items():
            if not str(target).startswith(prefix):
                continue
            absent = [m for m in modules if not can_import(m)]
            if absent:
                what = ", ".join(f"`{m}`" for m in absent)
                out.append(
                    f"memarena: {path} ({target}) needs the Python package{'s' * (len(absent) > 1)}"
                    f" {what}, not installed here: {hint}."
                )
    return out


def missing_keys(cfg: DictConfig, environ: Any = None) -> list[str]:
    """One message per backbone whose ``api_key_env`` names an unset variable."""
    environ = os.environ if environ is None else environ
    out = []
    for path, node in _walk(_plain(cfg)):
        var = node.get("api_key_env")
        if "_target_" in node and var and not environ.get(str(var)):
            out.append(
                f"memarena: {path}={node.get('name', '?')} reads its API key from ${var}, which "
                f"is not set in this shell (the jobs inherit it). Export {var}=<your key> before "
                f"launching, or set {path}.api_key_env=null for a server that needs no key."
            )
    return out


def _memarena_error(exc: BaseException) -> MemarenaError | None:
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, MemarenaError):
        cause = cause.__cause__ or cause.__context__
    return cause


def env_problem(env: DictConfig) -> str | None:
    """What building the job's env says about its data (None: it builds). A local Wikipedia is
    checked by its path only (building its index is the job's work)."""
    from hydra.utils import instantiate

    wiki = env.get("wiki") if isinstance(env, DictConfig) else None
    if isinstance(wiki, DictConfig) and str(wiki.get("_target_", "")).endswith("LocalWiki"):
        path = wiki.get("path")
        if not path:
            return "memarena: env/wiki=local needs env.wiki.path (a JSONL file, folder or glob)."
        found = list(Path().glob(str(path))) if any(c in str(path) for c in "*?[") else None
        if not (found or Path(str(path)).expanduser().exists()):
            return f"memarena: env.wiki.path={path} does not exist."
        return None
    try:
        instantiate(env, _convert_="all")
    except Exception as exc:  # noqa: BLE001 (a config message is reported, anything else too)
        err = _memarena_error(exc)
        return str(err) if err is not None else f"memarena: env does not build: {exc}"
    return None


def snapshot_problem(cfg: DictConfig) -> str | None:
    """The refusal the job would give for its ``protocol.snapshot_from``, else None."""
    from memarena.pipeline.build import RELEASED_SUFFIXES, snapshot_source

    value = OmegaConf.select(cfg, "protocol.snapshot_from", default=None)
    if not value:
        return None
    text = str(value)
    if Path(text).suffix in RELEASED_SUFFIXES and "/" in text:
        if Path(text).expanduser().exists():
            return None  # the job converts the released file
    try:
        snapshot_source(cfg, text)
    except MemarenaError as err:
        return str(err)
    return None


def check_job(
    cfg: DictConfig, env_cache: dict[str, str | None] | None = None,
    can_import: Callable[[str], bool] | None = None,
) -> list[str]:  # fmt: skip
    """Every problem of one job's composed config (see the module)."""
    problems = missing_packages(cfg, can_import) + missing_keys(cfg)
    cache = {} if env_cache is None else env_cache
    key = OmegaConf.to_yaml(cfg.env)
    if key not in cache:
        cache[key] = env_problem(cfg.env)
    if cache[key]:
        problems.append(str(cache[key]))
    snap = snapshot_problem(cfg)
    if snap:
        problems.append(snap)
    return problems


def check_sweep(
    jobs: Sequence[tuple[str, Callable[[], DictConfig]]],
    can_import: Callable[[str], bool] | None = None,
    cells: dict[str, tuple[str, ...]] | None = None,
) -> Report:
    """The report of a sweep: ``jobs`` as (its name, how to compose its config); a job that does
    not compose is one problem (its message), its other checks skipped. ``cells``: each job's
    swept overrides (see :class:`Report`)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    report, env_cache = Report(n_jobs=len(jobs), cells=dict(cells or {})), {}
    for name, compose in jobs:
        try:
            cfg = compose()
        except (HydraException, OmegaConfBaseException, MemarenaError) as exc:
            text = " ".join(f"{exc} {exc.__cause__ or ''}".split())
            report.add(f"memarena: the job's config does not compose: {text}", name)
            continue
        for problem in check_job(cfg, env_cache, can_import):
            report.add(problem, name)
    return report


def sweep_report(
    jobs: Sequence[Sequence[str]], swept: set[str], conf_dir: Path,
    can_import: Callable[[str], bool] | None = None,
) -> Report:  # fmt: skip
    """:func:`check_sweep` of a sweep's jobs (their overrides, as
    :func:`memarena.config_check.sweep_cells` lists them; ``swept``: the keys that name a cell),
    each composed as in its process (one composition per job less its seed)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from memarena.launch.compose import compose_job

    if not jobs:
        return Report()

    def composer(job: Sequence[str]) -> Callable[[], DictConfig]:
        return lambda: compose_job(job, conf_dir)

    named, cells = _named_jobs(jobs, swept, 0, composer)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            return check_sweep(named, can_import, cells)
    finally:
        GlobalHydra.instance().clear()


def _varying(jobs: Sequence[Sequence[str]]) -> set[str]:
    """The override keys whose values differ between ``jobs`` (what names a cell)."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for o in job:
            key, _, value = o.partition("=")
            values.setdefault(key.lstrip("+~"), set()).add(value)
    return {k for k, v in values.items() if len(v) > 1}


def launcher_report(
    hydra_context: Any, config: DictConfig, job_overrides: Sequence[Sequence[str]], first: int,
    can_import: Callable[[str], bool] | None = None,
) -> Report:  # fmt: skip
    """:func:`check_sweep` inside a launcher (the Slurm dry run): each job composed as the
    launcher composes it (Hydra's config loader; one composition per job less its seed)."""
    from memarena.launch.compose import seed_apart

    composed: dict[tuple[str, ...], DictConfig] = {}
    swept = _varying(job_overrides)

    def composer(job: Sequence[str]) -> Callable[[], DictConfig]:
        def run() -> DictConfig:
            rest, seed = seed_apart(job)
            if rest not in composed:
                composed[rest] = hydra_context.config_loader.load_sweep_config(config, list(rest))
            cfg = composed[rest]
            return OmegaConf.merge(cfg, {"seed": int(seed)}) if seed is not None else cfg

        return run

    named, cells = _named_jobs(job_overrides, swept, first, composer)
    return check_sweep(named, can_import, cells)


def _named_jobs(
    jobs: Sequence[Sequence[str]], swept: set[str], first: int,
    composer: Callable[[Sequence[str]], Callable[[], DictConfig]],
) -> tuple[list[tuple[str, Callable[[], DictConfig]]], dict[str, tuple[str, ...]]]:  # fmt: skip
    """Each job named by its number (from ``first``) and its swept overrides, with its composer;
    and each name's cell (the swept overrides), for :func:`check_sweep`."""
    named, cells = [], {}
    for offset, job in enumerate(jobs):
        cell = tuple(o for o in job if o.split("=", 1)[0].lstrip("+~") in swept)
        name = " ".join([f"#{first + offset}", *cell])
        named.append((name, composer(job)))
        cells[name] = cell
    return named, cells
