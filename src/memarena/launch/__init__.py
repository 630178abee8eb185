"""Sweeps on clusters: what one job needs (:mod:`.resources`), and the launchers' logic behind
``conf/launcher/{ray,slurm}.yaml`` (:mod:`.ray_jobs`, :mod:`.slurm`). The Hydra launcher
classes themselves live in ``hydra_plugins.memarena_launchers`` (Hydra only instantiates
launchers from that namespace); they call into these modules. A sweep folder's job records
(:mod:`.records`) and the rerun of its unfinished jobs (:mod:`.rerun`). docs/clusters.md is the
guide."""
