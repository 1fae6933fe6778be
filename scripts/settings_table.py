"""Rewrite the configuration table in README.md from backend.config (run after adding a setting)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.config import iter_setting_names  # noqa: E402

README = Path(__file__).resolve().parent.parent / "README.md"


def table() -> str:
    rows = ["| variable | default | what it does |", "| --- | --- | --- |"]
    rows += [f"| `{name}` | `{default}` | {desc} |" for name, default, desc in iter_setting_names()]
    return "\n".join(rows)


def main() -> None:
    text = README.read_text()
    new = re.sub(r"\| variable \| default \| what it does \|\n(?:\|.*\|\n)+", table() + "\n", text, count=1)
    README.write_text(new)


if __name__ == "__main__":
    main()
