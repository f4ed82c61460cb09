"""Sphinx configuration of the documentation site (``make docs``; docs/contributing.md says
why Sphinx, furo and MyST). The build is strict: ``make docs`` passes ``-W --keep-going``,
so a broken link between pages, a missing reference or a bad directive fails it."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # this checkout's kbgraph, also when not installed

import importlib  # noqa: E402
import importlib.util  # noqa: E402

from sphinx.ext.autodoc.mock import mock  # noqa: E402

from kbgraph import __version__  # noqa: E402

FACES = ("kbgraph", "kbgraph.retrieval", "kbgraph.graphs", "kbgraph.evals", "kbgraph.agents",
         "kbgraph.mcp", "kbgraph.inspector", "kbgraph.testing", "kbgraph.errors")  # fmt: skip
# The site builds with the docs extra alone (``make docs``): what the other extras bring
# (the inspector's web server, PostgreSQL, MCP, the local model, GGUF, charts) is mocked
# when it is not installed, so the pages of those names still render from the docstrings.
EXTRAS = ("starlette", "uvicorn", "psycopg", "psycopg_pool", "mcp", "langchain_mcp_adapters",
          "torch", "sentence_transformers", "onnx", "onnxruntime", "tokenizers", "xllamacpp",
          "matplotlib", "pandas")  # fmt: skip


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ImportError:
        return True


autodoc_mock_imports = [m for m in EXTRAS if _missing(m)]
# Without starlette the two ASGI apps (kbgraph.graphs.http_app, kbgraph.inspector.app) are
# mocked objects: documented by name only, which autodoc warns about (-W: an error).
_MOCKED_WARNINGS = ["autodoc.mocked_object"] if autodoc_mock_imports else []

# The faces load most names on first use (a module __getattr__), and autodoc lists only
# what a module's namespace holds: load every name of each __all__ before it looks.
with mock(autodoc_mock_imports):
    for _face in FACES:
        _module = importlib.import_module(_face)
        for _name in _module.__all__:
            setattr(_module, _name, getattr(_module, _name))

project = "kbgraph"
author = "kbgraph contributors"
copyright = "kbgraph contributors"
release = version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "kbgraph_docs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "ARCHITECTURE.md"]
# docs/ARCHITECTURE.md stays where contributors look for it; the site includes it through
# explanation/architecture.md.

# `[text](page.md#a-heading)` links resolve to headings up to level 3; a link to a page or
# heading that does not exist is a warning, which -W makes an error.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
# docutils' smart quotes turned every `--store` of the generated CLI reference into an en
# dash (`–store`), which a shell does not take: the pages print the characters written.
smartquotes = False
suppress_warnings: list[str] = [*_MOCKED_WARNINGS]
# Every unresolved Python reference is looked at; docs/_ext/kbgraph_docs.py makes one to a
# public name (kbgraph.retrieval.KnowledgeBase) an error, and lets other libraries' pass.
nitpicky = True

# The reference documents the public faces only, in the order of their __all__.
autodoc_default_options = {
    "members": True,
    "imported-members": True,  # a face re-exports what its private modules define
    "undoc-members": True,  # every name of __all__, a constant or an alias included
    "member-order": "bysource",
    "show-inheritance": True,
}
autodoc_typehints = "description"
autodoc_class_signature = "separated"
autodoc_inherit_docstrings = False
add_module_names = False

html_theme = "furo"
html_title = f"kbgraph {release}"
html_static_path = ["_static"]
# A favicon of our own: without one the browser asks for /favicon.ico, a 404 on every page.
html_favicon = "_static/favicon.svg"
html_copy_source = False  # the Markdown sources are copied beside the pages instead
