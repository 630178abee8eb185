"""MemCo's tables say where each row comes from: MemCo's own row is the paper's description
(the released MemCo cannot run), the baselines' rows the released code's runs."""

from memarena.reports.memco.tables import row_sources


def test_memco_row_is_the_papers_description_and_baselines_are_as_released():
    sources = row_sources(["icl", "memskill_as_released", "memrl_as_released", "memrl", "memco"])
    said = sources["source"].to_dict()
    assert said["memco"].startswith("paper's description")
    assert all(said[m].startswith("as released") for m in ("icl", "memskill_as_released",
                                                           "memrl_as_released"))  # fmt: skip
    assert said["memrl"] == "memarena's reading"  # MemRL with its learnt memory
