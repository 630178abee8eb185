"""env=scienceworld without Java: one message naming the Java it needs, before any JVM starts
(not the package's FileNotFoundError plus py4j's ``_gateway`` traceback at exit)."""

from __future__ import annotations

import pytest

from memarena.core import ConfigError
from memarena.envs.scienceworld import simulator


def test_no_java_on_path_is_one_message_naming_the_minimum(monkeypatch):
    monkeypatch.setattr(simulator.shutil, "which", lambda name: None)
    for build in (lambda: simulator.SimulatorPool("1g", 1), lambda: simulator.Simulator("1g")):
        with pytest.raises(ConfigError) as err:
            build()
        text = str(err.value)
        assert text.startswith("memarena: env=scienceworld needs Java 8 or newer")
        assert "no `java` on PATH" in text and "openjdk-17-jre-headless" in text
        assert "_gateway" not in text and "\n" not in text
