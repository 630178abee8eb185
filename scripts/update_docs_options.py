"""Write the table of every config group's options (read from conf/) into docs/configuration.md,
between its markers. tests/test_docs_options.py fails when the page and conf/ disagree.

    python scripts/update_docs_options.py
"""

from pathlib import Path

from memarena.conf_options import rewrite

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

if __name__ == "__main__":
    print(f"{PAGE}: {'updated' if rewrite(PAGE) else 'already up to date'}")
