"""Every bad value is named before anything runs (issue 36, 7): the top-level values and each
key of a ``_target_`` node are checked against the annotation of the parameter that takes it,
in the pre-check, with the one-paragraph message of a bad protocol value; no run folder is
made. The annotation checker is tested on hand-worked cases."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, Union

import pytest
from omegaconf import OmegaConf

from conftest import CONF, run_py
from memarena.config_check import check_overrides
from memarena.core import ConfigError
from memarena.core.typecheck import Range
from memarena.pipeline.validate import describe, fits, param_annotations, validate

if TYPE_CHECKING:
    from memarena.core import Backbone  # only for type checkers: its annotation is not checked

SCRIPTED = ["env=pddl", "backbone=scripted", "logger=none"]


# --- the annotation checker, by hand ----------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "hint", "ok"),
    [
        # bool is not an int, an int is not a bool; an int is a float, a bool is not
        (1, int, True), (True, int, False), (1.0, int, False), ("1", int, False),
        (True, bool, True), (1, bool, False), ("true", bool, False),
        (1, float, True), (0.5, float, True), (False, float, False), ("0.5", float, False),
        ("a", str, True), (1, str, False), (None, str, False),
        # None only where the annotation allows it
        (None, int, False), (None, int | None, True), (None, Optional[int], True),  # noqa: UP045
        (3, int | None, True), ("abc", int | None, False), (None, type(None), True),
        # unions and Literal
        ("x", Union[int, str], True), (1.5, int | str, False), (True, int | str, False),  # noqa: UP007
        ("a", Literal["a", "b"], True), ("c", Literal["a", "b"], False),
        (1, Literal[1, 2], True), (True, Literal[1, 2], False), (None, Literal["a"] | None, True),
        # lists: the container and each item
        (["a", "b"], list[str], True), ([], list[str], True), (["a", 1], list[str], False),
        ("ab", list[str], False), ([1, 2.5], Sequence[float], True), ([1, True], list[int], False),
        ([1, 2], list, True), ({"a": 1}, list, False), ([1, 2], tuple[int, ...], True),
        ([1, "a"], tuple[int, str], True), ([1, 2], tuple[int, str], False),
        ([[1], [2, 3]], list[list[int]], True), ([[1], ["x"]], list[list[int]], False),
        # mappings: the container, each key and each value
        ({"a": 1.0, "b": 2}, dict[str, float], True), ({"a": "x"}, dict[str, float], False),
        ({1: 1.0}, dict[str, float], False), ([1], dict[str, float], False),
        ({"a": [1]}, Mapping[str, Any], True), ({"a": 1}, dict, True), ("a", Mapping, False),
        ({"s": 6}, dict[str, int] | None, True), (None, dict[str, int] | None, True),
        # what the check does not know passes: Any, no annotation, a class, a Callable
        ("anything", Any, True), (None, Any, True), ("x", object, True), ("x", Path, True),
        (3, Path, False),
        # a number is finite (issue 50, 4): nan passes no bound, inf is no setting's value
        (float("nan"), float, False), (float("inf"), float, False), (-math.inf, float, False),
        (math.nan, float | None, False), (math.nan, Annotated[float, Range(ge=0)], False),
        (math.inf, Annotated[float, Range(ge=0)], False), (1e300, float, True),
    ],
)  # fmt: skip
def test_fits_worked_cases(value, hint, ok):
    assert fits(value, hint) is ok


@pytest.mark.parametrize(
    ("hint", "words"),
    [
        (int, "an int"), (float, "a number"), (bool, "true or false"), (str, "a string"),
        (int | None, "an int or null"), (Optional[float], "a number or null"),  # noqa: UP045
        (int | float, "an int or a number"), (Literal["a", "b"], "one of 'a', 'b'"),
        (list[str], "a list of strings"), (Sequence[int] | None, "a list of ints or null"),
        (list, "a list"), (dict[str, float], "a mapping of strings to numbers"),
        (Mapping[str, Any], "a mapping of strings to values"), (dict, "a mapping"),
    ],
)  # fmt: skip
def test_describe_says_what_the_annotation_asks_for(hint, words):
    assert describe(hint) == words


class Base:
    def __init__(self, alpha: float = 0.1, flags: list[str] | None = None, note=None) -> None:
        self.alpha, self.flags, self.note = alpha, flags, note


class Part(Base):
    """A target whose string annotations (``from __future__ import annotations``) include a name
    imported only for type checkers; the parameters of Base arrive through ``**kwargs``."""

    def __init__(self, k: int = 3, mode: Literal["a", "b"] = "a", llm: Backbone | None = None,
                 weights: dict[str, float] | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)


TARGET = f"{__name__}.Part"


def test_param_annotations_follow_the_mro_and_skip_what_does_not_evaluate():
    hints = param_annotations(TARGET)
    assert set(hints) == {"k", "mode", "llm", "weights", "alpha", "flags", "note"}
    assert hints["k"] == (int, "int") and hints["alpha"] == (float, "float")
    assert hints["mode"][0] == Literal["a", "b"] and hints["flags"][0] == list[str] | None
    assert hints["llm"] == (Any, "Backbone | None")  # TYPE_CHECKING-only name: not checked
    assert hints["note"][0] is Any  # unannotated


def _cfg(**method: Any):
    return OmegaConf.create({"seed": 0, "method": {"_target_": TARGET, **method}})


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ({"k": "abc"}, f"method.k='abc' must be an int ({TARGET} takes k: int; got str)"),
        ({"k": True}, f"method.k=True must be an int ({TARGET} takes k: int; got bool)"),
        ({"k": None}, f"method.k=None must be an int ({TARGET} takes k: int; got null)"),
        ({"alpha": "high"}, f"method.alpha='high' must be a number ({TARGET} takes alpha: float"),
        ({"mode": "c"}, "method.mode='c' must be one of 'a', 'b' ("),
        ({"flags": ["x", 2]}, "method.flags=['x', 2] must be a list of strings or null ("),
        ({"weights": {"a": "x"}}, "method.weights={'a': 'x'} must be a mapping of strings to "
                                  "numbers or null ("),
    ],
)  # fmt: skip
def test_validate_names_the_key_the_value_and_the_type(method, message):
    with pytest.raises(ConfigError) as err:
        validate(_cfg(**method), conf_dir=CONF)
    text = str(err.value)
    assert text.startswith("memarena: ") and message in text
    assert "Fix it on the command line or in conf/method/; the run did not start." in text
    assert "\n" not in text


def test_validate_passes_good_values_unannotated_keys_and_interpolations():
    cfg = _cfg(k=2, alpha=1, mode="b", flags=None, weights={"a": 1}, note=[1, "x"],
               llm={"_target_": "builtins.dict"})  # fmt: skip
    validate(cfg, conf_dir=CONF)
    # an interpolation resolves before the check; one that cannot resolve here is skipped
    validate(_cfg(k="${seed}"), conf_dir=CONF)
    validate(_cfg(k="${hydra:job.num}"), conf_dir=CONF)
    with pytest.raises(ConfigError, match=r"method.k='abc' must be an int"):
        validate(_cfg(k="${oc.select:nope,abc}"), conf_dir=CONF)


def test_top_level_values_are_typed():
    with pytest.raises(ConfigError, match=r"^memarena: seed='abc' must be an int \(got str\)"):
        validate(OmegaConf.create({"seed": "abc"}), conf_dir=CONF)
    with pytest.raises(ConfigError, match=r"quote it to pass a string: experiment_name=\"'7'\""):
        validate(OmegaConf.create({"seed": 1, "experiment_name": 7}), conf_dir=CONF)


# --- the pre-check on the command line --------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["seed=abc"], "seed='abc' must be an int (got str). Fix it on the command line: seed=abc"),
        (["seed=1.5"], "seed=1.5 must be an int (got float)"),
        (["method=memco", "method.threshold=abc"],
         "method.threshold='abc' must be a number > 0 and < 1 (memarena.memory.memco.method.MemCo "
         "takes threshold: float > 0 and < 1; got str)"),
        (["method=memco", "method.threshold=1"], "method.threshold=1 must be a number > 0 and < 1"),
        (["method=memco", "method.use_local=1"], "method.use_local=1 must be true or false"),
        (["method=memco", "method.facets=[x,1]"], "method.facets=['x', 1] must be a list of "
                                                  "values that are one of 'x', 'p', 'g'"),
        (["method=reme", "method.extraction=keypoint,trajectoryy"],
         "method.extraction='trajectoryy' must be one of 'keypoint', 'trajectory' (memarena."
         "memory.reme.method.ReMe takes extraction: Literal['keypoint', 'trajectory']; got str). "
         "Did you mean 'trajectory'?"),
        (["backbone=scripted", "backbone.epsilon=true"], "backbone.epsilon=True must be a number"),
        # a sweep's later values and the keys of other jobs' targets are checked too
        (["seed=0,abc"], "seed='abc' must be an int (got str). Fix it on the command line: "
                         "seed=0,abc"),
        (["method=none,memco", "method.threshold=abc"], "method.threshold='abc' must be a number"),
        (["method=memco", "method.k_local=1,2.5"], "method.k_local=2.5 must be an int"),
        # non-finite numbers and an empty evaluation (issue 50, 4), a sweep's values too
        (["protocol.temperature=nan"], "protocol.temperature=nan is not a finite number"),
        (["protocol.temperature=inf"], "protocol.temperature=inf is not a finite number"),
        (["protocol.episode_timeout_s=nan"], "protocol.episode_timeout_s=nan is not a finite"),
        (["protocol.max_error_rate=nan"], "protocol.max_error_rate=nan is not a finite number"),
        (["protocol.temperature=0,-inf"], "protocol.temperature=-inf must be a number (got -inf, "
                                          "which is not a finite number)"),
        (["protocol.max_eval_tasks=0"], "protocol.max_eval_tasks=0 would evaluate no task"),
        (["protocol.max_eval_tasks=2,0"], "protocol.max_eval_tasks=0 would evaluate no task"),
        (["backbone=scripted", "backbone.epsilon=nan"],
         "backbone.epsilon=nan must be a number (memarena.agent.policy.ExpertPolicy takes "
         "epsilon: float; got nan, which is not a finite number)"),
        (["method=memco", "method.threshold=inf"], "method.threshold=inf must be a number > 0"),
        (["method=reme", "method.dedup_threshold=nan"],
         "method.dedup_threshold=nan must be a number"),
    ],
)  # fmt: skip
def test_precheck_names_a_bad_value(overrides, message):
    error = check_overrides(overrides, CONF)
    assert error is not None and message in error, error
    assert error.endswith("the run did not start.")


def test_precheck_passes_good_values():
    assert check_overrides(["seed=3", "method=memco", "method.threshold=0.5", "method.facets=[x]"],
                           CONF) is None  # fmt: skip
    assert check_overrides(["seed=0,1", "method=none,memco", "method.k_local=2"], CONF) is None
    # an ad-hoc sweep names each job's folder by its overrides (method.k_local-2, -3): it passes;
    # under one experiment_name k_local=2,3 would write each memco cell (and each none cell:
    # none drops the key) twice: refused as one cell run twice (tests/test_sweep_cells.py)
    sweep = ["seed=0,1", "method=none,memco", "method.k_local=2,3"]
    assert check_overrides(sweep, CONF) is None
    error = check_overrides(["experiment_name=mine", *sweep], CONF)
    assert error is not None and "runs one cell twice" in error


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (["seed=abc"], "seed='abc' must be an int (got str)"),
        (
            ["method=memco", "method.threshold=abc"],
            "method.threshold='abc' must be a number > 0 and < 1 (memarena.memory.memco.method."
            "MemCo takes threshold: float > 0 and < 1; got str)",
        ),
        (["protocol.temperature=nan"], "protocol.temperature=nan is not a finite number"),
    ],
)
def test_run_py_stops_a_bad_value_before_any_folder(tmp_path, override, message):
    proc = run_py([*SCRIPTED, *override, f"paths.results_dir={tmp_path}"])
    assert proc.returncode != 0
    assert message in proc.stderr and "the run did not start" in proc.stderr
    assert "Traceback" not in proc.stderr and "Error in call to target" not in proc.stderr
    assert not list(tmp_path.iterdir())  # no run folder (no seedabc/ with finished: null)
