#!/usr/bin/env bash
# MemCo's tables and figures. Table 1 / 3 / 4 acquire memory; Tables 11-14 evaluate ablations on
# the frozen Table 1 ALFWorld snapshots (same backbone and seeds), so run Table 1 first.
# The experiment files pin MemCo's backbones, protocol and task lists; pass data overrides as
# arguments, e.g.
#   ALFWORLD_DATA=/data/alfworld bash experiments/memco.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python run.py -m experiment=memco_table1_alfworld "$@"
for table in memco_table11 memco_table12 memco_table13 memco_table14; do
  python run.py -m experiment="$table" "$@"
done
# FEVER, PDDL and ScienceWorld take their own data overrides:
#   python run.py -m experiment=memco_table1_fever env.path=/data/fever/shared_task_dev.jsonl env/wiki=live
#   python run.py -m experiment=memco_table1_pddl env.problems_dir=/data/agentboard/pddl
#   python run.py -m experiment=memco_table3_fever env.path=... env/wiki=live
#   python run.py -m experiment=memco_table4_scienceworld
jupyter nbconvert --to notebook --execute --inplace notebooks/memco.ipynb 2>/dev/null \
  || echo "open notebooks/memco.ipynb to regenerate the tables and figures"
