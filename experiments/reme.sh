#!/usr/bin/env bash
# ReMe's tables and figures on BFCL-V3 (multi_turn_base, 50 train / 150 test; protocol `reme`:
# 4 runs x 3 repetitions), in dependency order: Table 1 (No Memory, ReMe fixed) first, since
# ReMe (dynamic), Table 3, Table 5 / Figure 3 and Figure 4 evaluate its saved ReMe memory;
# Table 2 (trajectory granularity) and Table 4 (stronger summarizer) acquire their own. Then
# Table 1's AppWorld rows (SKIP_APPWORLD=1 leaves them out), the cross-paper runs on PDDL /
# ALFWorld / ScienceWorld (set SKIP_OTHER=1 to leave them out)
# and the notebook. Pass the backbone (the paper: Qwen3-8B, 14B, 32B presets) and overrides:
#   bash experiments/reme.sh backbone=<preset>
set -euo pipefail
cd "$(dirname "$0")/.."
for experiment in reme_table1 reme_table1_dynamic reme_table2 reme_table3 reme_table4_14b \
  reme_table4_32b reme_table5 reme_fig4; do
  python run.py -m experiment="$experiment" "$@"
done
if [[ -z "${SKIP_APPWORLD:-}" ]]; then  # needs make appworld and env.root=<AppWorld data>
  for experiment in reme_table1_appworld reme_table1_appworld_dynamic; do
    python run.py -m experiment="$experiment" "$@"
  done
fi
if [[ -z "${SKIP_OTHER:-}" ]]; then
  python run.py -m experiment=reme_other_benchmarks "$@"
fi
jupyter nbconvert --to notebook --execute --inplace notebooks/reme.ipynb 2>/dev/null \
  || echo "open notebooks/reme.ipynb to regenerate the tables and figures"
