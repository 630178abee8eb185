"""Label the failed trajectories of ReMe's Figure 5 runs with the memory LLM (ReMe Figure 5(b)).

    python scripts/label_failures.py --results-dir results --backbone qwen3_8b
    python scripts/label_failures.py --results-dir results --backbone smollm2_135m \
        --set backbone.device=cpu --variants none dynamic
    python scripts/label_failures.py --results-dir results --backbone openai_server \
        --set backbone.base_url=http://host:8000/v1

For every run whose config declares ReMe's ``fig5`` section (``reme_table1``), every failed
evaluation episode is shown to the backbone (``conf/backbone/<name>.yaml``, the same presets as
``run.py backbone=...``; ``--set`` takes their keys) with a fixed prompt and answered with one
of the failure categories (memarena.reports.reme.failure_labels: the paper's Reasoning Error and
Action Omission, and ours). The labels go into ``<run dir>/failure_labels.jsonl`` beside
``episodes.jsonl``, with the BFCL checker's error type beside each, the labeller's name and the
prompt version; ``notebooks/reme.ipynb`` draws Figure 5(b) from them. A run already labelled by
the same model and prompt version is skipped (``--force`` relabels it).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_backbone(name: str, sets: list[str], results_dir: Path):
    """``conf/backbone/<name>.yaml`` composed with ``sets`` (its call cache in
    ``<results_dir>/.label_calls.sqlite`` unless ``--set backbone.cache_path=...``)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
    from memarena.pipeline.build import build_part

    overrides = [f"backbone={name}", f"paths.llm_cache={results_dir / '.label_calls.sqlite'}",
                 f"paths.cache_dir={ROOT / '.cache'}", *sets]  # fmt: skip
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=overrides)
    if "ExpertPolicy" in str(cfg.backbone.get("_target_", "")):
        raise SystemExit(
            f"label_failures: backbone={name} is the scripted expert, not an LLM; "
            "give an LLM backbone (e.g. smollm2_135m, qwen3_8b, openai_server)"
        )
    return build_part(cfg.backbone)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", default="results", help="root of the results layout")
    parser.add_argument(
        "--backbone",
        default="smollm2_135m",
        help="conf/backbone preset of the labeller (default smollm2_135m)",
    )
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="Hydra overrides of the backbone, e.g. backbone.device=cpu",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        default=None,
        help="only these rows (variant names: none, reme, dynamic, ...)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="requests per call")
    parser.add_argument("--force", action="store_true", help="relabel labelled runs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    from memarena.reports.reme import failure_labels as fl
    from memarena.reports.reme import tables as rr

    results_dir = Path(args.results_dir).resolve()
    runs = rr.load_runs(results_dir, "fig5")
    if args.variants and not runs.empty:
        runs = runs[runs["variant_key"].isin(args.variants)]
    if runs.empty:
        print(f"label_failures: no runs declaring ReMe's fig5 under {results_dir}; run "
              f"{rr.command_for('fig5')} first")  # fmt: skip
        return 2
    llm = build_backbone(args.backbone, args.set, results_dir)
    try:
        for run_dir in runs["run_dir"]:
            done = fl.labelled_with(fl.read_labels(run_dir))
            if not args.force and done == {(llm.name, fl.PROMPT_VERSION)}:
                print(f"{run_dir}: labelled by {llm.name} ({fl.PROMPT_VERSION}) already")
                continue
            rows = fl.label_run(run_dir, llm, rr.failure_category, args.batch_size)
            counts: dict[str, int] = {}
            for row in rows:
                counts[row["category"]] = counts.get(row["category"], 0) + 1
            print(f"{run_dir}: {len(rows)} failed episodes labelled {counts}")
    finally:
        llm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
