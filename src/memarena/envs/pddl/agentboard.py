"""Loader for an external problem folder in AgentBoard's layout.

The folder holds one domain file per domain and one sub-folder of problems per domain::

    <dir>/gripper.pddl      <dir>/gripper/prob01.pddl ...
    <dir>/blockworld.pddl   <dir>/blockworld/problem1.pddl ...   (AgentBoard's spelling)

Problems are simulated with the folder's own domain file and reported under our domain names
(``blockworld`` -> ``blocksworld``). They are sorted in natural order (``problem2`` before
``problem10``) or, with ``order="lexicographic"``, in plain file-name order (``problem1``,
``problem10``, ``problem2``, ...), which is the order of AgentBoard's own task list and of the
``problem_index`` in MemCo's and G-Memory's PDDL task files.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyperplan.pddl.parser import Parser

from memarena.core.errors import ConfigError
from memarena.envs.pddl.render import natural_key
from memarena.envs.pddl.simulator import UndeclaredObjectError, load_problem
from memarena.envs.pddl.specs import SPECS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExternalProblem:
    domain: str  # our domain name
    source: str  # path relative to the folder, e.g. "blockworld/problem1.pddl"
    domain_pddl: str
    problem_pddl: str


def _domain_file(root: Path, domain: str) -> tuple[str, Path] | None:
    for name in (domain, *SPECS[domain].aliases):
        if (root / f"{name}.pddl").is_file():
            return name, root / f"{name}.pddl"
    return None


ORDERS = ("natural", "lexicographic")


def read_pddl(path: Path, kind: str) -> str:
    """The text of a PDDL ``kind`` (domain/problem) file; ConfigError naming the file when it is
    not UTF-8 text (a binary or corrupt file)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"memarena: the PDDL {kind} file {path} (env.problems_dir) is not text: byte "
            f"{data[err.start]:#04x} at offset {err.start} is not UTF-8 (a binary or corrupt "
            f"file?). Replace it with the plain-text PDDL {kind}."
        ) from None


def check_domain(path: Path, text: str) -> None:
    """ConfigError naming the domain file when it does not parse on its own (a truncated or
    broken domain is not blamed on the first problem parsed with it)."""
    if not text.strip():
        raise ConfigError(
            f"memarena: the PDDL domain file {path} (env.problems_dir) is empty. Replace it with "
            "the domain's PDDL."
        )
    parser = Parser(None)
    parser.domInput = text
    try:
        parser.parse_domain(read_from_file=False)
    except Exception as exc:  # pyperplan raises a mix of ParseError, SemanticError, ...
        raise ConfigError(
            f"memarena: the PDDL domain file {path} (env.problems_dir) does not parse: "
            f"{type(exc).__name__}: {exc}. Is it truncated? Replace it with the full domain."
        ) from None


def load_folder(
    path: str | Path, domains: Sequence[str], order: str = "natural"
) -> dict[str, list[ExternalProblem]]:
    """All problems of ``domains`` in the folder; every problem is parsed and grounded once.

    Raises ConfigError when the folder, a domain file or a domain's problems are missing, or a
    problem does not parse.
    """
    if order not in ORDERS:
        raise ConfigError(f"memarena: env.problem_order={order!r}; valid: {list(ORDERS)}.")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ConfigError(
            f"memarena: env.problems_dir={path} is not a folder. Point it at a folder holding "
            "<domain>.pddl files and <domain>/ problem folders, or set env.problems_dir=null "
            "to use the generated test split."
        )
    out: dict[str, list[ExternalProblem]] = {}
    for domain in domains:
        found = _domain_file(root, domain)
        if found is None:
            names = " or ".join(f"{n}.pddl" for n in (domain, *SPECS[domain].aliases))
            raise ConfigError(
                f"memarena: env.problems_dir={root} has no domain file for {domain} ({names}). "
                f"Add it, or drop {domain} from env.domains."
            )
        folder_name, domain_file = found
        domain_pddl = read_pddl(domain_file, "domain")
        check_domain(domain_file, domain_pddl)
        key = (lambda p: natural_key(p.name)) if order == "natural" else (lambda p: p.name)
        files = sorted((root / folder_name).glob("*.pddl"), key=key)
        if not files:
            raise ConfigError(
                f"memarena: env.problems_dir={root} has {domain_file.name} but no problems in "
                f"{root / folder_name}/*.pddl. Add them, or drop {domain} from env.domains."
            )
        problems = []
        for f in files:
            text = read_pddl(f, "problem")
            if not text.strip():
                raise ConfigError(
                    f"memarena: the problem file {f} (env.problems_dir) is empty. Replace it with "
                    f"the PDDL problem, or remove it."
                )
            try:
                load_problem(domain_pddl, text)
            except UndeclaredObjectError as exc:
                raise ConfigError(
                    f"memarena: the problem file {f} (env.problems_dir): {exc}. The task would "
                    "run as an unsolvable one."
                ) from None
            except ValueError as exc:
                raise ConfigError(
                    f"memarena: the problem file {f} (env.problems_dir) does not parse with the "
                    f"domain file {domain_file}: {exc}"
                ) from None
            problems.append(ExternalProblem(domain, f"{folder_name}/{f.name}", domain_pddl, text))
        out[domain] = problems
        log.info("loaded %d %s problems from %s", len(problems), domain, root / folder_name)
    return out
