"""bm25s imports JAX when it is installed and runs a top-k on it at import; on a GPU machine that
started JAX's CUDA backend in every Strata process (15 -> 4,111 MiB resident on an H200, and JAX
takes most of the GPU's memory). Strata's BM25 is scored with numpy, so JAX is kept from that
import. Here a stand-in `jax` package on the path records whether anything imported it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
{imports}
import jax
print(json.dumps({{"available": bm25s.selection.JAX_IS_AVAILABLE, "jax_imports": jax.IMPORTS}}))
"""


def _run(tmp_path: Path, imports: str) -> dict:
    fake = tmp_path / "site" / "jax"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("import builtins\nbuiltins.JAX_IMPORTS = getattr(builtins, 'JAX_IMPORTS', 0) + 1\n"
                                      "IMPORTS = builtins.JAX_IMPORTS\n")
    (fake / "lax.py").write_text("import numpy as np\n\ndef top_k(x, k):\n    x = np.asarray(x)\n"
                                 "    i = np.argsort(-x)[:k]\n    return x[i], i\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), str(REPO_ROOT)]))
    out = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], env=env, cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_plain_bm25s_imports_an_installed_jax(tmp_path):
    """The control: the stand-in is found, and bm25s alone takes it."""
    seen = _run(tmp_path, "import bm25s, bm25s.selection")
    assert seen == {"available": True, "jax_imports": 1}


def test_strata_imports_bm25s_without_jax_and_leaves_jax_importable(tmp_path):
    seen = _run(tmp_path, "import backend.index.lexical\nimport bm25s, bm25s.selection")
    # bm25s took no JAX; the later `import jax` is the first and only one, and it works
    assert seen == {"available": False, "jax_imports": 1}
