"""Label FEVER claims Film/TV vs Music and draw MemCo's partition (Appendix F.3) from them.

    python scripts/prepare_fever_partition.py --claims fever_dev.jsonl --labeller embedding
    python scripts/prepare_fever_partition.py --claims fever_dev.jsonl --labeller llm \\
        --backbone smollm2_135m
    ... --compare DIR    # DIR holds MemCo's fever_ab_{train_A,train_B,test}_v3.jsonl

Writes ``--out`` (one row per claim: id, split, ab_domain, label, confidence, main_domain; no
claim text) and ``<out>.meta.json`` (labeller, source file and sha256, counts, seed, date, and
the agreement with MemCo's labels when ``--compare`` is given).

The embedding labeller's prototypes (memarena.envs.fever.partition.PROTOTYPES) and its default
threshold were chosen by reasoning and by reading the labels of random dev claims outside
MemCo's 260; MemCo's labels were only used to measure agreement afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.envs.fever.partition import (
    DOMAINS,
    EmbeddingLabeller,
    LLMLabeller,
    agreement,
    build_partition,
    format_confusion,
    partition_counts,
    read_claims,
    read_reference_partition,
)

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
DEFAULT_OUT = ROOT / "src" / "memarena" / "envs" / "fever" / "data" / "memco_partition.jsonl"
# embedding confidences are softmax probabilities (sharp); LLM ones are self-reported
DEFAULT_MIN_CONFIDENCE = {"embedding": 0.9, "llm": 0.7}

log = logging.getLogger("prepare_fever_partition")


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base=None):
            return compose(config_name="config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def _preset(group: str, name: str) -> None:
    choices = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
    if name not in choices:
        raise ConfigError(
            f"memarena: --{group} {name} is not a preset in {CONF / group}. Valid choices: "
            f"{', '.join(choices)}."
        )


def make_labeller(args: argparse.Namespace):
    from hydra.utils import instantiate

    if args.labeller == "embedding":
        _preset("embedder", args.embedder)
        cfg = _compose([f"embedder={args.embedder}", f"seed={args.seed}"])
        return EmbeddingLabeller(instantiate(cfg.embedder, _convert_="all"))
    _preset("backbone", args.backbone)
    cfg = _compose([f"backbone={args.backbone}", f"seed={args.seed}"])
    return LLMLabeller(instantiate(cfg.backbone, _convert_="all"), batch_size=args.batch_size)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--claims", required=True, type=Path, help="official FEVER jsonl")
    p.add_argument("--labeller", choices=("embedding", "llm"), default="embedding")
    p.add_argument("--embedder", default="minilm", help="preset in conf/embedder/ (embedding)")
    p.add_argument("--backbone", default="smollm2_135m", help="preset in conf/backbone/ (llm)")
    p.add_argument("--batch-size", type=int, default=32, help="requests per generate call (llm)")
    p.add_argument(
        "--min-confidence",
        type=float,
        default=None,
        help="candidates need this confidence (default: 0.9 embedding, 0.7 llm)",
    )
    p.add_argument("--n-train", type=int, default=100)
    p.add_argument("--n-test-per-domain", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="folder with MemCo's three fever_ab_*_v3.jsonl files",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    try:
        return run(args)
    except ConfigError as err:
        log.error("%s", err)
        return 2


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    min_conf = args.min_confidence
    if min_conf is None:
        min_conf = DEFAULT_MIN_CONFIDENCE[args.labeller]
    reference = read_reference_partition(args.compare) if args.compare else None
    claims = read_claims(args.claims)
    log.info("read %d claims from %s", len(claims), args.claims)
    labeller = make_labeller(args)
    t1 = time.perf_counter()
    labels = labeller.label(claims)
    label_s = time.perf_counter() - t1
    domain_counts = Counter(lab.ab_domain for lab in labels)
    confident = Counter(lab.ab_domain for lab in labels if lab.confidence >= min_conf)
    log.info(
        "labelled %d claims in %.1f s: %s; with confidence >= %s: %s",
        len(labels),
        label_s,
        dict(domain_counts),
        min_conf,
        dict(confident),
    )
    rows = build_partition(
        claims,
        labels,
        n_train=args.n_train,
        n_test_per_domain=args.n_test_per_domain,
        min_confidence=min_conf,
        seed=args.seed,
    )
    counts = partition_counts(rows)
    for key, value in counts.items():
        log.info("%-18s %s", key, value)

    comparison = None
    if reference is not None:
        comparison = agreement(labels, reference, rows)
        # accuracy on the reference claims we are confident about
        conf_ids = {lab.id for lab in labels if lab.confidence >= min_conf}
        sub = {i: r for i, r in reference.items() if i in conf_ids}
        comparison["confident"] = {
            k: v for k, v in agreement(labels, sub).items() if k in ("n", "accuracy")
        }
        for split in ("train", "test"):
            part = {i: r for i, r in reference.items() if r["split"] == split}
            comparison[f"accuracy_{split}"] = agreement(labels, part)["accuracy"]
        log.info(
            "agreement with %s: accuracy %.3f on %d claims (%d missing); on the %d we label "
            "with confidence >= %s: %.3f; ids also in our partition: %d",
            args.compare,
            comparison["accuracy"],
            comparison["n"],
            comparison["missing"],
            comparison["confident"]["n"],
            min_conf,
            comparison["confident"]["accuracy"] or 0.0,
            comparison["overlap"],
        )
        log.info(
            "confusion (rows: MemCo, columns: ours)\n%s", format_confusion(comparison["confusion"])
        )

    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    meta = {
        "labeller": labeller.describe(),
        "source": {
            "file": args.claims.name,
            "sha256": sha256(args.claims),
            "n_claims": len(claims),
        },
        "params": {
            "n_train": args.n_train,
            "n_test_per_domain": args.n_test_per_domain,
            "min_confidence": min_conf,
            "seed": args.seed,
        },
        "seed": args.seed,
        "domains": list(DOMAINS),
        "labelled": {
            "all": dict(sorted(domain_counts.items())),
            "confident": dict(sorted(confident.items())),
        },
        "counts": counts,
        "comparison": comparison,
        "runtime_s": {"labelling": round(label_s, 1), "total": round(time.perf_counter() - t0, 1)},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    meta_path = out.with_name(out.name + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    log.info(
        "wrote %d rows to %s and %s in %.1f s",
        len(rows),
        out,
        meta_path.name,
        time.perf_counter() - t0,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
