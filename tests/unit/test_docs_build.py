"""docs/conf.py (issue 43): the site prints options as written (docutils' smart quotes
made the CLI reference's ``--store`` an en dash, which cannot be pasted into a shell: a page
in a tiny Sphinx project built with the conf's ``smartquotes`` keeps ``--``), and the conf
loads with the docs extra alone (it loaded every face's names, and the inspector's and the
HTTP app's need starlette: the other extras' imports are made to fail in a subprocess)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from sphinx.application import Sphinx

CONF = Path(__file__).resolve().parents[2] / "docs" / "conf.py"


def _conf_smartquotes() -> object:
    """docs/conf.py's ``smartquotes`` (Sphinx's default, ``True``, when it sets none)."""
    for node in ast.parse(CONF.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "smartquotes":
            return ast.literal_eval(node.value)
    return True


def test_options_keep_their_double_hyphen(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "conf.py").write_text(
        f'extensions = ["myst_parser"]\nsmartquotes = {_conf_smartquotes()!r}\n', "utf-8"
    )
    (src / "index.md").write_text('# CLI\n\n--store URL: the store -- "quoted"\n', "utf-8")
    app = Sphinx(src, src, out, tmp_path / "doctrees", "html", status=None, warning=None)
    app.build()
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "--store URL" in html
    assert "\u2013" not in html and "\u201c" not in html


BLOCKER = """
import importlib.abc, sys
EXTRAS = {"starlette", "uvicorn", "psycopg", "mcp", "langchain_mcp_adapters", "torch",
          "sentence_transformers", "onnxruntime", "xllamacpp", "matplotlib", "pandas"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""


def test_the_conf_loads_without_the_other_extras(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER, "utf-8")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{CONF.parents[1]}"}
    code = (
        "import runpy, sys\n"
        "try:\n    import starlette\nexcept ImportError:\n    pass\n"
        "else:\n    sys.exit('the blocker did not block')\n"
        f"conf = runpy.run_path({str(CONF)!r})\n"
        "print(sorted(conf['autodoc_mock_imports']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'starlette'" in done.stdout
