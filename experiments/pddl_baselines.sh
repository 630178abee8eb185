#!/usr/bin/env bash
# No-memory vs ICL on PDDL, three seeds, then the table. Pass extra overrides as arguments,
# e.g. backbone=<preset> launcher=slurm.
set -euo pipefail
cd "$(dirname "$0")/.."
python run.py -m experiment=pddl_baselines "$@"
python scripts/make_tables.py --results-dir results --out results/tables
