"""memarena entry point: memory acquisition, then frozen evaluation, for one config.

python run.py                                  # embedded defaults on a CPU
python run.py method=icl env=pddl backbone=scripted
python run.py -m method=none,icl seed=0,1      # a sweep
python run.py --cfg job                        # print the composed config
python run.py --list [group]                   # the config groups, or one group's options
"""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/, in every process)

CONF_DIR = Path(__file__).resolve().parent / "conf"


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg: DictConfig) -> float | None:
    from memarena.cli import run_job

    return run_job(cfg)


if __name__ == "__main__":
    from memarena.cli import list_options, precheck, resolved_settings_note

    if "--list" in sys.argv[1:]:
        sys.exit(list_options(sys.argv[1:], CONF_DIR))
    sys.argv[1:] = precheck(sys.argv[1:], CONF_DIR)
    main()
    if any(a in ("--cfg", "-c") for a in sys.argv[1:]):  # Hydra printed the config: add what
        note = resolved_settings_note(sys.argv[1:], CONF_DIR)  # the run will resolve
        if note:
            print(note)
