"""The report membership the experiment configs declare (``report: {paper, tables}`` in
conf/experiment/*.yaml) against the sections the report modules know, and the helpers of
memarena.reports.common that read those declarations for the "no results yet" hint."""

import pandas as pd
import pytest
import yaml

from conftest import CONF, compose_cfg
from memarena.reports.common import (
    CONF_DIR,
    declaring_configs,
    experiment_configs,
    missing_hint,
    report_missing,
    section_runs,
)
from memarena.reports.cross_paper import tables as cross_paper_tables
from memarena.reports.evograph import tables as evograph_tables
from memarena.reports.memco import tables as memco_tables
from memarena.reports.reme import tables as reme_tables

MODULES = {
    "memco": memco_tables,
    "evograph": evograph_tables,
    "reme": reme_tables,
    "cross_paper": cross_paper_tables,
}
PAPER_CONFIGS = sorted(
    p.stem for p in (CONF / "experiment").glob("*.yaml") if p.stem.split("_")[0] in MODULES
)


def test_default_conf_dir_is_the_repositorys():
    assert CONF_DIR == CONF
    assert {c.name for c in experiment_configs()} == {
        p.stem for p in (CONF / "experiment").glob("*.yaml")
    }


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_paper_experiment_declares_known_sections(name):
    """Every memco_* / evograph_* / reme_* experiment declares its paper (the file's prefix)
    and at least one table, each a section that paper's report module knows."""
    paper = name.split("_")[0]
    node = yaml.safe_load((CONF / "experiment" / f"{name}.yaml").read_text()).get("report")
    assert isinstance(node, dict) and {"paper", "tables"} <= set(node), node
    assert set(node) <= {"paper", "tables", "backbones"}, node
    assert node["paper"] == paper
    assert isinstance(node["tables"], list) and node["tables"], node
    unknown = set(node["tables"]) - set(MODULES[paper].SECTIONS)
    assert not unknown, f"{name} declares {unknown}; {paper} knows {MODULES[paper].SECTIONS}"


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_paper_experiments_name_their_papers_backbones(name):
    """``report.backbones`` (a run on another backbone is flagged ``not_paper_backbone``) holds
    backbones the paper reports (its numbers file), and every backbone the experiment runs by
    default or sweeps is one of them (MemCo's Table 3 names none, and ReMe's "other" runs are
    memarena's own, not a paper table: both unchecked)."""
    from omegaconf import OmegaConf

    from memarena.pipeline.summarize import on_paper_backbone
    from memarena.reports.paper import paper_numbers
    from memarena.results.collect import backbone_key

    cfg = compose_cfg([f"experiment={name}"], return_hydra_config=True)
    paper, listed = cfg.report.paper, list(cfg.report.backbones)
    if paper == "cross_paper" or name in ("memco_table3_fever", "reme_other_benchmarks"):
        assert listed == [], name
        return
    reported = {backbone_key(b) for b in paper_numbers(paper)["backbone"]}
    assert listed and {backbone_key(b) for b in listed} <= reported, (name, listed)
    swept = str(OmegaConf.select(cfg, "hydra.sweeper.params.backbone", default="") or "")
    for preset in [p for p in swept.split(",") if p] or [None]:
        job = compose_cfg([f"experiment={name}", *([f"backbone={preset}"] if preset else [])])
        assert on_paper_backbone(job), (name, preset, listed)
    other = compose_cfg([f"experiment={name}", "backbone=smollm2_135m"])
    assert not on_paper_backbone(other)


@pytest.mark.parametrize("paper", sorted(MODULES))
def test_every_section_has_a_declaring_config(paper):
    """Each section's hint has a command to offer."""
    for section in MODULES[paper].SECTIONS:
        assert declaring_configs(paper, section), (paper, section)


def test_any_declared_paper_is_known():
    """A config outside the paper prefixes (e.g. pddl_baselines) may declare a paper too, but
    only a known one with its known sections."""
    for c in experiment_configs():
        if c.paper is not None:
            assert c.paper in MODULES, (c.name, c.paper)
            assert set(c.tables) <= set(MODULES[c.paper].SECTIONS), (c.name, c.tables)
        else:
            assert c.tables == (), f"{c.name} declares tables {c.tables} without a paper"


def write_config(folder, name, body):
    path = folder / "experiment" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# @package _global_\n" + body)


def test_declaring_configs_and_hint_from_a_conf_dir(tmp_path, capsys):
    """Configs are read from the given conf dir; those starting from a snapshot come after
    those that acquire, and the hint says which runs they need first."""
    write_config(
        tmp_path,
        "b_sweep",
        "experiment_name: b\nreport:\n  paper: p\n  tables: [t1, t2]\n"
        "protocol:\n  snapshot_from: a\n",
    )
    write_config(tmp_path, "a_base", "experiment_name: a\nreport:\n  paper: p\n  tables: [t2]\n")
    write_config(tmp_path, "c_other", "experiment_name: c\nreport:\n  paper: q\n  tables: [t2]\n")
    write_config(tmp_path, "d_plain", "experiment_name: d\n")
    assert [c.name for c in declaring_configs("p", "t2", tmp_path)] == ["a_base", "b_sweep"]
    assert [c.name for c in declaring_configs("p", "t1", tmp_path)] == ["b_sweep"]
    assert declaring_configs("p", "t3", tmp_path) == []
    (d,) = [c for c in experiment_configs(tmp_path) if c.name == "d_plain"]
    assert (d.experiment_name, d.paper, d.tables, d.snapshot_from) == ("d", None, (), None)

    assert not report_missing(pd.DataFrame(), "p", "t2", tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("no results for p t2 yet")
    assert lines[1:] == [
        "  python run.py -m experiment=a_base backbone=<preset>",
        "  python run.py -m experiment=b_sweep backbone=<preset>   # after the a runs",
        "Showing the paper's numbers alone.",
    ]
    assert report_missing(pd.DataFrame({"x": [1]}), "p", "t2", tmp_path)
    assert capsys.readouterr().out == ""
    hint = missing_hint("p", "t3", tmp_path)
    assert f"No experiment config in {tmp_path / 'experiment'} declares it" in hint
    assert experiment_configs(tmp_path / "nowhere") == []


def test_section_runs_without_results(tmp_path):
    assert section_runs(tmp_path / "nothing", "reme", "table1").empty
    assert section_runs(tmp_path, "reme", "table1").empty


@pytest.mark.parametrize("paper", sorted(MODULES))
def test_unknown_section_is_refused(paper, tmp_path):
    module = MODULES[paper]
    with pytest.raises(ValueError, match=f"'nope' is not a {paper} report section; known"):
        module.load_runs(tmp_path, "nope")
    with pytest.raises(ValueError, match="known"):
        module.command_for("nope")
