"""docs/configuration.md lists every option of every config group as conf/ holds them (issue 51,
6): the table is generated (scripts/update_docs_options.py) and a file added to conf/ without
rerunning it fails here."""

from __future__ import annotations

import shutil

from conftest import CONF, ROOT
from memarena.conf_options import BEGIN, END, options_table, options_text

PAGE = ROOT / "docs" / "configuration.md"


def test_the_docs_table_is_conf_s():
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert table == options_table(CONF), (
        "docs/configuration.md's options table differs from conf/: run "
        "python scripts/update_docs_options.py"
    )
    for option in ("evograph", "memco", "submitit_local", "gmemory_memco", "memrl_as_released",
                   "openai_server"):  # fmt: skip
        assert option in table


def test_an_option_added_to_conf_shows_in_the_table(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    before = options_table(conf)
    n = len(list((conf / "ablation" / "memco").glob("*.yaml")))
    (conf / "method" / "my_method.yaml").write_text("name: my_method\n")
    (conf / "ablation" / "memco" / "my_toggle.yaml").write_text("name: my_toggle\n")
    assert "my_method" in options_text(conf, "method")
    assert f"memco/* ({n + 1})" in options_text(conf, "ablation")
    assert options_table(conf) != before
