"""MemRL as MemCo's script ran it (an empty intent table at evaluation) beside ICL: the notebook
compares the two rows, expected to agree, and shows how many entries MemRL put in the prompt."""

import math

import pandas as pd

from memarena.reports.memco.tables import as_released_beside_icl, summarize


def _runs(variant: str, seed: int, success: float, entries: float | None) -> list[dict]:
    base = {"experiment": "memco_table1_pddl", "env": "pddl", "backbone": "qwen3-8b",
            "variant": variant, "seed": seed, "fingerprint": f"{variant}{seed}", "n_tasks": 60,
            "n_episodes": 60, "flags": "", "setting": "pddl", "step_budget": 30}  # fmt: skip
    rows = [{**base, "metric": "accuracy", "value": success}]
    if entries is not None:
        rows.append({**base, "metric": "avg_mem_entries", "value": entries})
    return rows


def test_memrl_as_released_sits_beside_icl_with_the_difference_and_entries_shown():
    long = pd.DataFrame(
        _runs("icl", 0, 40.0, None) + _runs("icl", 1, 50.0, None)
        + _runs("memrl_as_released", 0, 40.0, 0.0) + _runs("memrl_as_released", 1, 56.0, 0.0)
        + _runs("memrl", 0, 70.0, 3.0)
    )  # fmt: skip
    table = as_released_beside_icl(summarize(long))
    assert len(table) == 1  # accuracy only: avg_mem_entries is a column, memrl is not compared
    row = table.iloc[0]
    assert (row["setting"], row["metric"]) == ("pddl", "accuracy")
    assert row["difference"] == 3.0  # 48 - 45
    assert row["memrl_mem_entries"] == 0.0
    assert row["icl"].startswith("45.0 ±") and row["memrl_as_released"].startswith("48.0 ±")


def test_nothing_to_compare_without_both_rows():
    long = pd.DataFrame(_runs("icl", 0, 40.0, None) + _runs("memrl", 0, 70.0, 3.0))
    assert as_released_beside_icl(summarize(long)).empty
    assert as_released_beside_icl(pd.DataFrame()).empty
    one = pd.DataFrame(_runs("icl", 0, 40.0, None) + _runs("memrl_as_released", 0, 41.0, None))
    assert math.isnan(as_released_beside_icl(summarize(one)).iloc[0]["memrl_mem_entries"])
