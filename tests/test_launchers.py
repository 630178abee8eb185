"""The multirun launchers run real jobs (docs/clusters.md): Ray on a real head on loopback, inside
a network namespace of the test's own; submitit's local executor; joblib on one empty cache. Each
sweep's metrics are compared with the same sweep on Hydra's basic launcher. Every sweep runs as a
user types it, without ``hydra.sweep.dir``: from a temporary working directory, so the default
``outputs/multiruns/<date>_<time>`` folder lands there; the only test-only overrides are
``paths.results_dir`` and ``paths.cache_dir`` (temporary folders). Slurm is not here:
its per-backbone resources, its refusal of a mixed sweep and its message without Slurm are
checked before submission. Two in-process vLLM engines are refused before loading."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import MODELS_DIR, ROOT, compose_cfg, run_py
from memarena.core import ConfigError
from memarena.launch.ray_jobs import TASK_RECORD, init_kwargs
from memarena.launch.resources import JobResources, check_colocation, job_resources

# a 4-job scripted sweep: seconds per job, no model
SCRIPTED = ["method=none", "env=pddl", "env.domains=[gripper,blocksworld]", "backbone=scripted",
            "protocol.max_train_tasks=0", "protocol.max_eval_tasks=2", "logger=none"]  # fmt: skip
SEEDS = "seed=0,1,2,3"


def _metrics(results: Path) -> dict[int, dict]:
    out = {}
    for path in results.rglob("metrics.json"):
        body = json.loads(path.read_text())
        out[body["seed"]] = body
    return out


def sweep_dir(cwd: Path) -> Path:
    """The one sweep folder a sweep started in ``cwd`` made (the default hydra.sweep.dir)."""
    (found,) = (cwd / "outputs" / "multiruns").iterdir()
    return found


def _sweep(tmp: Path, name: str, extra: list[str], base: list[str] = SCRIPTED, **kw):
    """The sweep as typed, started in ``<tmp>/<name>-cwd`` (its sweep folder lands there)."""
    res, cwd = tmp / name, tmp / f"{name}-cwd"
    cwd.mkdir()
    proc = run_py(["-m", *base, SEEDS, f"paths.results_dir={res}", f"paths.cache_dir={tmp}/cache",
                   *extra], cwd=cwd, **kw)  # fmt: skip
    return proc, res


@pytest.fixture(scope="module")
def basic_sweep(tmp_path_factory):
    """The scripted sweep on Hydra's basic launcher: the reference every launcher must match."""
    tmp = tmp_path_factory.mktemp("basic")
    proc, res = _sweep(tmp, "basic", ["launcher=local"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, res


@pytest.fixture(scope="module")
def basic_metrics(basic_sweep) -> dict[int, dict]:
    metrics = _metrics(basic_sweep[1])
    assert sorted(metrics) == [0, 1, 2, 3]
    return metrics


@pytest.mark.xdist_group("launchers_basic")
def test_a_sweep_ends_with_one_table_of_its_jobs(basic_sweep, basic_metrics):
    """One row per job: method, env, backbone, seed, success [95% interval over tasks],
    n_tasks and flags, as each job's metrics.json says."""
    from memarena.cli import COLUMNS

    lines = basic_sweep[0].stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("memarena: sweep of"))
    assert lines[start].startswith("memarena: sweep of 4 job(s), 0 failed")
    assert lines[start + 1].split() == list(COLUMNS)
    rows = [line.split() for line in lines[start + 2 : start + 6]]
    for job, row in enumerate(rows):
        m = basic_metrics[job]  # seed k is job k
        low, high = m["success_rate_ci95"]
        assert row[:5] == [str(job), "none", m["env"], m["backbone"], str(job)]
        assert " ".join(row[5:8]) == f"{m['success_rate']:.3f} [{low:.3f}, {high:.3f}]"
        assert row[9] == str(m["n_tasks"]) == "2" and row[10] == ",".join(m["flags"])


# -- Ray ---------------------------------------------------------------------------------------

RAY_SCRIPT = r"""
set -u
ip link set lo up
cleanup() { "$VENV/ray" stop --force >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$VENV/ray" start --head --node-ip-address=127.0.0.1 --port="$PORT" --num-cpus=2 --num-gpus=0 \
  --include-dashboard=false --disable-usage-stats --temp-dir="$RAY_TMPDIR/t" \
  > "$OUT/head.log" 2>&1 || { echo "ray start failed"; cat "$OUT/head.log"; exit 3; }
ss -ltn > "$OUT/listening.txt"
"$VENV/python" - > "$OUT/nodes.json" <<EOF
import json, ray
ray.init(address="127.0.0.1:$PORT", logging_level="ERROR")
print(json.dumps([n["NodeID"] for n in ray.nodes() if n["Alive"]]))
EOF
mkdir -p "$OUT/cwd" && cd "$OUT/cwd"  # as a user starts a sweep: the sweep folder lands here
"$VENV/python" "$ROOT/run.py" -m "$@" > "$OUT/sweep.out" 2> "$OUT/sweep.err"
echo "sweep exit $?"
mkdir -p "$OUT/fail" && cd "$OUT/fail"  # one job whose results folder is under a regular file
touch afile
"$VENV/python" "$ROOT/run.py" -m $FAILING "paths.results_dir=$OUT/fail/afile/res" \
  > "$OUT/fail.out" 2> "$OUT/fail.err"
echo "failing sweep exit $?"
"""

# the issue's command (issue 53), as typed; the test adds only temporary results and cache folders
ISSUE_53 = ["launcher=ray", "hydra.launcher.ray.init.address=auto", "method=none,icl", "env=pddl",
            "backbone=scripted", "seed=0,1", "experiment=null", "protocol.max_train_tasks=2",
            "protocol.max_eval_tasks=2", "logger=none"]  # fmt: skip
FAILING = (
    "launcher=ray hydra.launcher.ray.init.address=auto method=none env=pddl backbone=scripted "
    "seed=0 experiment=null protocol.max_train_tasks=0 protocol.max_eval_tasks=1 logger=none"
)


def test_ray_sweep_as_typed_on_a_running_cluster(tmp_path):
    """Issue 53's command, joining a real Ray head on 127.0.0.1 (``address=auto``) in a network
    namespace holding only loopback (Ray binds every interface it has), without
    hydra.sweep.dir: all 4 jobs run as tasks of that cluster into the default sweep folder
    (each record names the head's node and address, 1 CPU and no GPU assigned: the scripted
    backbone's resources). Then, on the same head, a sweep whose one job raises in its worker
    (NotADirectoryError: its results folder is under a regular file): the summary names the
    exception's type, message and the file and line that raised it, the traceback is kept, the
    log names the Ray worker logs, and the rerun command is printed."""
    assert shutil.which("unshare") and shutil.which("ip"), "needs util-linux unshare and iproute2"
    ray_tmp = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))  # Ray's socket paths must be short
    port = 6390
    args = [*ISSUE_53, f"paths.results_dir={tmp_path / 'res'}", f"paths.cache_dir={tmp_path}/cache"]
    # no usage reporting; no token authentication (Ray 2.60 would read or write ~/.ray/auth_token)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_TMPDIR": str(ray_tmp), "FAILING": FAILING,
           "OUT": str(tmp_path), "PORT": str(port), "ROOT": str(ROOT),
           "VENV": str(Path(sys.executable).parent)}  # fmt: skip
    ns = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        ns.insert(1, "--map-root-user")
    try:  # the pid namespace ends with its first process: every Ray process goes with it
        proc = subprocess.run([*ns, "bash", "-c", RAY_SCRIPT, "ray-test", *args], env=env,
                              capture_output=True, text=True, timeout=360)  # fmt: skip
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    err = (tmp_path / "sweep.err").read_text() if (tmp_path / "sweep.err").exists() else ""
    assert "sweep exit 0" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:] + err[-3000:]
    listening = (tmp_path / "listening.txt").read_text()
    assert ":" + str(port) in listening
    (head,) = json.loads((tmp_path / "nodes.json").read_text())
    sweep = sweep_dir(tmp_path / "cwd")
    records = [json.loads((sweep / str(n) / TASK_RECORD).read_text()) for n in range(4)]
    assert {r["node_id"] for r in records} == {head}
    assert {r["gcs_address"] for r in records} == {f"127.0.0.1:{port}"}
    assert len({r["task_id"] for r in records}) == 4 and len({r["job_id"] for r in records}) == 1
    assert all(r["assigned_resources"] == {"CPU": 1.0} for r in records), records
    done = sorted(json.loads(p.read_text())["job"] for p in (sweep / "jobs").glob("*.json"))
    assert done == [0, 1, 2, 3] and not (sweep / "failed_jobs").exists()
    metrics = [json.loads(p.read_text()) for p in (tmp_path / "res").rglob("metrics.json")]
    assert sorted((m["method"], m["seed"]) for m in metrics) == [
        ("icl", 0), ("icl", 1), ("none", 0), ("none", 1)]  # fmt: skip
    assert all(m["n_episodes"] == 2 for m in metrics)
    assert "memarena: sweep of 4 job(s), 0 failed" in (tmp_path / "sweep.out").read_text()
    # the failing job
    assert "failing sweep exit 1" in proc.stdout, proc.stdout[-2000:]
    out, err = (tmp_path / "fail.out").read_text(), (tmp_path / "fail.err").read_text()
    assert "memarena: sweep of 1 job(s), 1 failed" in out, out[-3000:] + err[-3000:]
    line = next(x for x in out.splitlines() if x.startswith("  #0 ") and "Ray task failed" in x)
    assert "NotADirectoryError: [Errno 20] Not a directory" in line, line
    assert re.search(r"raised at \S+pathlib\.py:\d+ in mkdir; worker pid \d+ on 127\.0\.0\.1", line)
    trace = sweep_dir(tmp_path / "fail") / "failed_jobs" / "0.traceback.txt"
    assert f"traceback in {trace.relative_to(tmp_path / 'fail')}" in line
    frames = trace.read_text()  # the worker's frames, from the task down to the raise
    assert "in run_on_ray" in frames and "in mkdir" in frames and "NotADirectoryError" in frames
    said = r"worker logs \(worker-\*-<pid>\.out/\.err\) in (\S+) on each node"
    logs = re.search(said, out + err)
    assert logs and logs[1].startswith(str(ray_tmp)) and logs[1].endswith("/logs"), err[-3000:]
    assert "rerun only these" in out and "hydra/sweeper=memarena_rerun" in out


def test_ray_init_joins_without_local_options_and_ignores_a_stale_cluster_file(
    tmp_path, monkeypatch
):
    """The plugin always adds object_store_memory, which Ray refuses when joining: dropped for an
    address; a ray_current_cluster file naming a cluster that is gone starts a local instance
    (with the options); one naming a live one is joined (without them)."""
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    opts = {"address": "auto", "object_store_memory": 78643200, "num_cpus": 2}
    assert init_kwargs(opts) == {"address": "auto"}
    assert init_kwargs({**opts, "address": "10.0.0.5:6379"}) == {"address": "10.0.0.5:6379"}
    (tmp_path / "ray").mkdir()
    record = tmp_path / "ray" / "ray_current_cluster"
    with socket.socket() as gone:
        gone.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{gone.getsockname()[1]}"
    record.write_text(dead)  # nothing listens there any more
    assert init_kwargs({**opts, "address": None}) == {
        "address": "local", "object_store_memory": 78643200, "num_cpus": 2}  # fmt: skip
    with socket.socket() as live:
        live.bind(("127.0.0.1", 0))
        live.listen()
        record.write_text(f"127.0.0.1:{live.getsockname()[1]}")
        assert init_kwargs({**opts, "address": None}) == {
            "address": f"127.0.0.1:{live.getsockname()[1]}"}  # fmt: skip


# -- resources ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, need",
    [
        (["backbone=qwen3_32b"], JobResources(gpus=2)),  # tensor_parallel_size 2
        (["backbone=qwen3_4b"], JobResources(gpus=1)),
        (["backbone=qwen3_4b", "backbone.tensor_parallel_size=4"], JobResources(gpus=4)),
        (["backbone=gpt_4o_mini"], JobResources(gpus=0)),  # an endpoint
        (["backbone=openai_server"], JobResources(gpus=0)),
        (["backbone=smollm2_135m"], JobResources(gpus=0)),  # embedded, CPU
        (["backbone=smollm2_135m_vllm"], JobResources(gpus=0)),  # vLLM's CPU backend
        (["backbone=scripted", "memory_backbone=qwen3_14b"], JobResources(gpus=1)),
        (["backbone=qwen3_32b", "+backbone.resources.cpus=4"], JobResources(gpus=2, cpus=4)),
        (["env=scienceworld"], JobResources(gpus=0, cpus=2)),  # the JVM beside the agent loop
        (["env=appworld", "backbone=qwen3_4b"], JobResources(gpus=1, cpus=2)),
        (["env=alfworld"], JobResources(gpus=0, cpus=1)),
    ],
)
def test_a_job_needs_what_its_backbones_and_env_declare(overrides, need):
    assert job_resources(compose_cfg(overrides)) == need


def test_a_bad_resource_key_is_named():
    cfg = compose_cfg(["backbone=qwen3_4b", "+backbone.resources.gpu=1"])
    with pytest.raises(ConfigError, match=r"backbone.resources.gpu is not a resource key"):
        job_resources(cfg)


def test_two_in_process_engines_are_refused_unless_they_fit_and_the_user_said_so():
    """ReMe Table 4: the agent (qwen3_8b) beside the summarizer in one process. With Qwen3-32B
    (each at 0.90) the run is refused with both ways out; the Qwen3-14B file splits one GPU
    0.35 / 0.55 and says so (share_gpus)."""
    cfg = compose_cfg(["experiment=reme_table4_32b"])
    with pytest.raises(ConfigError) as err:
        check_colocation(cfg)
    text = str(err.value)
    assert "gpu_memory_utilization=0.9)" in text and text.count("0.9") >= 2
    assert "scripts/serve.py backbone=qwen3_32b" in text and "memory_backbone=openai_server" in text
    assert "memory_backbone.resources.share_gpus=true" in text
    check_colocation(compose_cfg(["experiment=reme_table4_14b"]))  # the shipped split
    not_said = ["memory_backbone.resources.share_gpus=false"]
    with pytest.raises(ConfigError, match="must be asked for"):  # fits, but not said
        check_colocation(compose_cfg(["experiment=reme_table4_14b", *not_said]))
    with pytest.raises(ConfigError, match="cannot fit"):  # said, but 0.9 + 0.55 > 1
        check_colocation(
            compose_cfg(["experiment=reme_table4_14b", "backbone.gpu_memory_utilization=0.9"])
        )
    # the endpoint way: the memory model served, one engine in the process
    check_colocation(compose_cfg(["experiment=reme_table4_32b", "memory_backbone=openai_server"]))


def test_a_run_with_two_engines_stops_before_loading(tmp_path):
    """No vLLM here: the run ends with the one message before any model is built."""
    proc = run_py(["experiment=reme_table4_32b", "logger=none", f"paths.results_dir={tmp_path}"],
                  timeout=300)  # fmt: skip
    out = proc.stdout + proc.stderr  # the run's log line
    assert proc.returncode == 2, out[-3000:]
    assert "would both load an in-process vLLM engine" in out
    assert "No module named" not in out and "Traceback" not in out
    assert not list(tmp_path.rglob("identity.json"))  # no run folder was started


# -- Slurm -------------------------------------------------------------------------------------

MIXED = ["method=none", "env=pddl", "backbone=qwen3_4b,qwen3_32b,gpt_4o_mini", "seed=0",
         "logger=none", "launcher=slurm"]  # fmt: skip


@pytest.fixture
def login_node(tmp_path, monkeypatch):
    """What the pre-flight asks of MIXED (tests/test_preflight.py): the API key exported and a
    `vllm` package found (an empty stand-in on PYTHONPATH; nothing imports it before
    submission)."""
    (tmp_path / "stub" / "vllm").mkdir(parents=True)
    (tmp_path / "stub" / "vllm" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path / "stub"), *filter(None, [os.environ.get("PYTHONPATH")])]))  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def test_slurm_refuses_a_mixed_sweep_before_submission(tmp_path, login_node):
    proc = run_py(["-m", *MIXED, f"paths.results_dir={tmp_path}"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    err = proc.stderr
    assert "Nothing was submitted" in err and "Traceback" not in err
    assert "gpt_4o_mini: 0 GPUs" in err and "qwen3_4b: 1 GPU," in err and "qwen3_32b: 2 GPUs" in err
    for backbone in ("qwen3_4b", "qwen3_32b", "gpt_4o_mini"):
        assert f"launcher=slurm paths.results_dir={tmp_path} " in err
        assert f" backbone={backbone}\n" in err + "\n"
    assert not list(tmp_path.rglob(".submitit"))


def test_slurm_dry_run_shows_each_backbones_resources(tmp_path, login_node):
    """Without hydra.sweep.dir: the generated jobs' folder is the default one, resolved here
    (each job's process reads it from the pickled config, as the submitit_local test runs)."""
    proc = run_py(["-m", *MIXED, "hydra.launcher.dry_run=true", f"paths.results_dir={tmp_path}"],
                  cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert re.search(r"submitit folder \./outputs/multiruns/[\d-]+_[\d-]+/\.submitit/%j\n", out), (
        out
    )
    assert "gpus_per_node=0 cpus_per_task=1" in out and "backbones gpt_4o_mini; 1 jobs" in out
    assert "gpus_per_node=1" in out and "backbones qwen3_4b" in out
    assert "gpus_per_node=2" in out and "backbones qwen3_32b" in out


def test_slurm_without_slurm_stops_with_one_message(tmp_path):
    assert shutil.which("sbatch") is None, "this test needs a machine without Slurm"
    proc = run_py(["-m", *SCRIPTED, "seed=0,1", "launcher=slurm", f"paths.results_dir={tmp_path}"],
                  cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "launcher=slurm needs Slurm, and sbatch and srun are not on PATH" in proc.stderr
    assert "Traceback" not in proc.stderr and "Could not detect" not in proc.stderr


# -- submitit_local and joblib -----------------------------------------------------------------


@pytest.mark.xdist_group("launchers_basic")  # one basic-launcher reference sweep
def test_submitit_local_runs_a_sweep(tmp_path, basic_metrics):
    proc = run_py(["-m", *SCRIPTED, "seed=0,1", "launcher=submitit_local",
                   f"paths.results_dir={tmp_path / 'res'}", f"paths.cache_dir={tmp_path}/cache"],
                  cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _metrics(tmp_path / "res") == {s: basic_metrics[s] for s in (0, 1)}
    sweep = sweep_dir(tmp_path)  # every job's process wrote into the one default folder
    assert len(list((sweep / ".submitit").glob("*/*_result.pkl"))) == 2
    assert sorted(p.name for p in (sweep / "jobs").iterdir()) == ["0.json", "1.json"]


# the household suite, as small as it builds: every job of the sweep needs it
SUITE = ["method=none", "env=alfworld", "backbone=scripted", "env.domains=[kitchen]",
         "env.task_types=[pick_and_place]", "env.suite.n_train=1", "env.suite.n_valid_seen=1",
         "env.suite.n_valid_unseen=1", "env.suite.n_layouts=2", "env.suite.n_heldout_layouts=1",
         "env.suite.workers=1", "protocol.max_train_tasks=0", "protocol.max_eval_tasks=2",
         "logger=none", f"paths.models_dir={MODELS_DIR}"]  # fmt: skip


def test_joblib_sweep_on_one_empty_cache(tmp_path):
    """Four jobs, two at a time, start on an empty cache: the household suite is built once (the
    builds' lock), no job breaks another, and the results are the basic launcher's."""
    proc, res = _sweep(tmp_path, "joblib", ["launcher=joblib", "hydra.launcher.n_jobs=2"],
                       base=SUITE, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    built = [p for p in (tmp_path / "cache" / "alfworld").iterdir() if p.is_dir()]
    assert len(built) == 1, built  # one suite, all four jobs read it
    joblib_sweep = sweep_dir(tmp_path / "joblib-cwd")  # the default folder, one for all jobs
    assert sorted(p.name for p in (joblib_sweep / "jobs").iterdir()) == [
        f"{n}.json" for n in "0123"
    ]
    assert not (joblib_sweep / "failed_jobs").exists()
    proc, ref = _sweep(tmp_path, "basic", ["launcher=local"], base=SUITE, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    joblib, basic = _metrics(res), _metrics(ref)
    assert sorted(joblib) == [0, 1, 2, 3] and joblib == basic
    assert all(m["n_episodes"] == 2 and m["n_errors"] == 0 for m in joblib.values())


def test_cluster_launcher_configs_name_our_launchers():
    for launcher, target in (("ray", "MemarenaRayLauncher"), ("slurm", "MemarenaSlurmLauncher")):
        cfg = compose_cfg([f"launcher={launcher}"], return_hydra_config=True)
        assert OmegaConf.select(cfg, "hydra.launcher._target_").endswith(target)


def test_resources_do_not_change_a_runs_identity():
    """What a launcher reserves is not what a run computes: a resume is not refused for it."""
    from memarena.pipeline.identity import config_identity

    base = config_identity(compose_cfg(["backbone=qwen3_32b", "memory_backbone=qwen3_14b"]))
    more = config_identity(compose_cfg(["backbone=qwen3_32b", "memory_backbone=qwen3_14b",
                                        "backbone.resources.gpus=4", "+backbone.resources.cpus=8",
                                        "memory_backbone.resources.share_gpus=true"]))  # fmt: skip
    assert base == more and not [k for k in base if ".resources." in k]


# -- finishing what failed ---------------------------------------------------------------------

# one experiment_name: the two commands' runs share folders (ad-hoc names would keep them apart)
RERUN = ["method=none", "env=pddl", "env.domains=[gripper]", "backbone=scripted", "experiment=null",
         "experiment_name=rerun", "protocol.max_eval_tasks=1", "logger=none"]  # fmt: skip


def test_the_rerun_command_runs_only_the_failed_job(tmp_path):
    """Issue 51 item 3: a 4-job sweep whose job 3 fails (its run folder holds records made with
    another protocol.max_train_tasks); the summary lists it and prints one command; after the
    cause is removed, that command runs 1 job, the failed one, and it ends with a result."""
    res, cache = f"paths.results_dir={tmp_path}/res", f"paths.cache_dir={tmp_path}/cache"
    first = run_py([*RERUN, "seed=3", "protocol.max_train_tasks=1", res, cache], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    proc = run_py(["-m", *RERUN, "seed=0,1,2,3", "protocol.max_train_tasks=0", res, cache],
                  cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    out = proc.stdout
    assert "memarena: sweep of 4 job(s), 1 failed" in out and "holds records made with" in out
    assert "memarena: 1 job(s) unfinished (1 failed, 0 never ended):\n  #3 " in out, out[-3000:]
    command = out.split("rerun only these (each run resumes from its records):\n  ")[1].split("\n")[
        0
    ]
    assert command.startswith("python run.py -m ") and "hydra/sweeper=memarena_rerun" in command
    stale = next((tmp_path / "res").rglob("seed3"))
    shutil.rmtree(stale)  # the cause, removed
    os.rename(tmp_path / "outputs", tmp_path / "first")  # the sweep folder named in the command
    command = command.replace(str(tmp_path / "outputs"), str(tmp_path / "first"))
    again = run_py(shlex.split(command)[2:], cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert "memarena: sweep of 1 job(s), 0 failed" in again.stdout, again.stdout[-3000:]
    assert "unfinished" not in again.stdout
    (only,) = (tmp_path / "outputs" / "multiruns").iterdir()
    (job,) = [json.loads(p.read_text()) for p in (only / "jobs").glob("*.json")]
    assert job["seed"] == 3 and (stale / "metrics.json").is_file()


def test_unfinished_jobs_are_the_failed_and_the_never_ended(tmp_path):
    """The jobs are numbered as Hydra's basic sweeper numbers them (the experiment's sweeper
    params first); a job with neither a result nor a failure record never ended."""
    from memarena.launch.rerun import unfinished

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    saved = {"hydra": {"sweeper": {"params": {"method": "none,icl"}},
                       "overrides": {"task": ["seed=0,1,2", "env=pddl"]}}}  # fmt: skip
    OmegaConf.save(OmegaConf.create(saved), sweep / "multirun.yaml")
    for folder, num in (("jobs", 0), ("jobs", 1), ("failed_jobs", 2), ("jobs", 4)):
        (sweep / folder).mkdir(exist_ok=True)
        (sweep / folder / f"{num}.json").write_text(json.dumps({"job": num, "error": "x"}))
    left = [(u.num, u.overrides, u.why) for u in unfinished(sweep)]
    assert left == [
        (2, ["method=none", "seed=2", "env=pddl"], "failed"),
        (3, ["method=icl", "seed=0", "env=pddl"], "never ended"),
        (5, ["method=icl", "seed=2", "env=pddl"], "never ended"),
    ]


def test_a_transient_failure_is_retried_with_back_off(monkeypatch):
    """A job whose server did not answer runs again (resuming), waiting retry_backoff_s doubled
    at each try; a failure that is not transient, or the last try's, ends the job."""
    import time as time_module

    from memarena.cli import run_retrying
    from memarena.core import ServerUnreachableError

    waits = []
    monkeypatch.setattr(time_module, "sleep", waits.append)
    hydra = OmegaConf.create({"launcher": {"retries": 2, "retry_backoff_s": 10}})
    calls = []

    def flaky(cfg, choices, overrides, fail=2, exc=ServerUnreachableError):
        calls.append(1)
        if len(calls) <= fail:
            raise exc("the server did not answer")
        return {"success_rate": 1.0}

    assert run_retrying(flaky, None, {}, [], hydra) == {"success_rate": 1.0}
    assert len(calls) == 3 and waits == [10, 20]
    calls.clear()
    with pytest.raises(ServerUnreachableError):  # a third failure: retries spent
        run_retrying(lambda *a: flaky(*a, fail=3), None, {}, [], hydra)
    calls.clear()
    with pytest.raises(ConfigError):  # not transient: at once
        run_retrying(lambda *a: flaky(*a, exc=ConfigError), None, {}, [], hydra)
    assert len(calls) == 1
    no_keys = OmegaConf.create({"launcher": {"n_jobs": 2}})  # joblib: no retries
    calls.clear()
    with pytest.raises(ServerUnreachableError):
        run_retrying(flaky, None, {}, [], no_keys)
    assert len(calls) == 1


def test_a_failed_ray_task_is_named_with_its_type_message_and_place():
    """What ray.get raises for a task that raised (a class of both RayTaskError and the cause's,
    whose str is the worker's traceback): the summary's line gives the type, the message's first
    line, the file, line and function that raised, and the worker's pid and node."""
    from ray.exceptions import RayTaskError, WorkerCrashedError

    from memarena.launch.ray_jobs import failure

    try:
        Path("/nonexistent/file").read_text()
    except FileNotFoundError as exc:
        import traceback

        trace = "".join(traceback.format_exception(exc))
        err = RayTaskError("run_on_ray", trace, exc, proctitle="ray::run_on_ray", pid=41,
                           ip="10.0.0.7").as_instanceof_cause()  # fmt: skip
    line, kept = failure(err)
    assert line.startswith("FileNotFoundError: [Errno 2] No such file or directory: ")
    assert re.search(r"\(raised at \S+pathlib\.py:\d+ in open; worker pid 41 on 10\.0\.0\.7\)$",
                     line), line  # fmt: skip
    assert "test_launchers.py" in kept and "read_text" in kept
    line, _ = failure(WorkerCrashedError())
    assert line.startswith("WorkerCrashedError: ")
