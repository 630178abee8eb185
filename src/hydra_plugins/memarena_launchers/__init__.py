"""memarena's Hydra launchers (``conf/launcher/ray.yaml``, ``slurm.yaml``): hydra-ray-launcher's
and hydra-submitit-launcher's, with each job's resources taken from its backbone and the
checks that must come before submission (memarena.launch); and the sweeper that reruns only a
sweep's unfinished jobs (``hydra/sweeper=memarena_rerun``, memarena.launch.rerun). Hydra
instantiates plugins only from the ``hydra_plugins`` namespace, hence this module; the logic is
in ``memarena.launch``. Imported at every Hydra start (plugin discovery): nothing heavy here."""

from dataclasses import dataclass
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore

_STORE = ConfigStore.instance()

try:  # hydra-submitit-launcher is a dependency; guarded like the optional Ray plugin
    from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
except ImportError:  # pragma: no cover
    SlurmLauncher = None

if SlurmLauncher is not None:

    @dataclass
    class MemarenaSlurmConf(SlurmQueueConf):
        _target_: str = "hydra_plugins.memarena_launchers.MemarenaSlurmLauncher"
        # print each resource class (backbones, jobs, sbatch resources) and submit nothing
        dry_run: bool = False
        # a job whose LLM / env server did not answer runs again (resuming) this many times,
        # waiting retry_backoff_s, doubled each time (memarena.cli.run_retrying)
        retries: int = 3
        retry_backoff_s: float = 60.0

    class MemarenaSlurmLauncher(SlurmLauncher):
        """One job array per sweep, its resources from the jobs' backbones; a sweep whose
        backbones need different resources is refused before submission (memarena.launch.slurm)."""

        def __init__(self, dry_run: bool = False, retries: int = 3,
                     retry_backoff_s: float = 60.0, **params: Any) -> None:  # fmt: skip
            super().__init__(**params)  # submitit takes no memarena keys: the job reads them
            self.dry_run = bool(dry_run)

        def launch(self, job_overrides, initial_job_idx):
            from memarena.launch.slurm import prepare

            prepare(self, job_overrides, initial_job_idx)
            return super().launch(job_overrides, initial_job_idx)

    _STORE.store(group="hydra/launcher", name="memarena_submitit_slurm", node=MemarenaSlurmConf,
                 provider="memarena")  # fmt: skip

try:  # pip install 'memarena[ray]'
    from hydra_plugins.hydra_ray_launcher._config import RayConf
    from hydra_plugins.hydra_ray_launcher.ray_launcher import RayLauncher
except ImportError:
    RayLauncher = None

if RayLauncher is not None:
    from dataclasses import field

    @dataclass
    class MemarenaRayConf:
        _target_: str = "hydra_plugins.memarena_launchers.MemarenaRayLauncher"
        ray: RayConf = field(default_factory=RayConf)
        # refuse a job no live node can hold (false: a cluster that adds nodes on demand)
        check_fit: bool = True
        # a job whose LLM / env server did not answer runs again (resuming) this many times,
        # waiting retry_backoff_s, doubled each time (memarena.cli.run_retrying)
        retries: int = 3
        retry_backoff_s: float = 60.0

    class MemarenaRayLauncher(RayLauncher):
        """Joins a running cluster or starts a local one; one Ray task per job with the
        resources of its backbone (memarena.launch.ray_jobs)."""

        def __init__(self, ray: Any, check_fit: bool = True, retries: int = 3,
                     retry_backoff_s: float = 60.0) -> None:  # fmt: skip
            super().__init__(ray=ray)
            self.check_fit = bool(check_fit)

        def launch(self, job_overrides, initial_job_idx):
            from memarena.launch.ray_jobs import launch

            return launch(self, job_overrides, initial_job_idx)

    _STORE.store(group="hydra/launcher", name="memarena_ray", node=MemarenaRayConf,
                 provider="memarena")  # fmt: skip


@dataclass
class MemarenaRerunConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.memarena_launchers.MemarenaRerunSweeper"
    sweep_dir: str = "???"  # the sweep whose failed / never-ended jobs to run again


class MemarenaRerunSweeper(BasicSweeper):
    """Runs only the unfinished jobs of an earlier sweep (memarena.launch.rerun), in one batch
    on the configured launcher; the sweep's own overrides are not expanded again."""

    def __init__(self, sweep_dir: str, max_batch_size: Any = None, params: Any = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.sweep_dir = sweep_dir

    def sweep(self, arguments):
        from memarena.launch.rerun import rerun_jobs

        return rerun_jobs(self, arguments)


_STORE.store(group="hydra/sweeper", name="memarena_rerun", node=MemarenaRerunConf,
             provider="memarena")  # fmt: skip
