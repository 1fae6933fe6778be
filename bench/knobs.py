"""Every parameter of every retrieval method, as the code defines it now.

    python bench/knobs.py            # a markdown table, one row per parameter

Read from the methods' typed parameter models (backend/retrieval/base.py), so the table cannot
drift from the code: the default under default Settings, the Settings path a default comes from,
the defaults a corpus profile switches to (backend/stages/profile.py: separate documents, short
separate documents, a template corpus's dense-only alpha), and the parameter's own description,
which says where its value was set. Module constants that are not parameters are not listed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.retrieval import base  # noqa: E402
from backend.stages.profile import KIND_OVERRIDES  # noqa: E402

KIND_LABELS = {"template": "template corpus", "web_of_pages": "web of pages", "short_separate": "short separate documents",
               "long_separate": "long separate documents"}


def _switches(method: type[base.Retriever], name: str) -> str:
    """The corpus profile kinds that change this parameter's default (backend/stages/profile.py), as text."""
    out = []
    for kind, overrides in KIND_OVERRIDES.items():
        if name in overrides.get(method.name, {}):
            value = overrides[method.name][name]
            shown = "0 (dense)" if name == "alpha" and value == 0 else value
            out.append(f"{KIND_LABELS[kind]}: {shown}")
    return "; ".join(out)


def rows(settings: Settings | None = None) -> list[tuple[str, str, str, str, str, str]]:
    """(method, parameter, default, setting, corpus switches, description) for every parameter."""
    settings = settings or Settings()
    out = []
    for name in base.method_names():  # the menu order
        method = base.get_retriever_class(name)
        defaults = method.Params.defaults(settings)
        for field, info in method.Params.model_fields.items():
            setting = method.Params._extra(field)["setting"] or ""  # noqa: SLF001 - the model's own field metadata
            out.append((name, field, repr(defaults[field]), setting, _switches(method, field),
                        " ".join((info.description or "").split())))
    return out


def table(settings: Settings | None = None) -> str:
    lines = ["| method | parameter | default | setting | default on a corpus of | description (where it was set) |",
             "|---|---|---|---|---|---|"]
    for row in rows(settings):
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(table())


if __name__ == "__main__":
    main()
