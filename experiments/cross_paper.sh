#!/usr/bin/env bash
# The cross-paper table: every method on every benchmark under one protocol, backbone and
# embedder (conf/experiment/cross_paper.yaml; 13 methods x 6 benchmarks x 3 seeds), then the
# notebook (table, average ranks, Friedman / Iman-Davenport, Holm, cost per method). LangMem
# needs its extra: pip install -e '.[langmem]'. Pass the backbone and overrides:
#   bash experiments/cross_paper.sh backbone=qwen3_32b launcher=slurm
set -euo pipefail
cd "$(dirname "$0")/.."
python run.py -m experiment=cross_paper "$@"
jupyter nbconvert --to notebook --execute --inplace notebooks/cross_paper.ipynb 2>/dev/null \
  || echo "open notebooks/cross_paper.ipynb to regenerate the table and statistics"
