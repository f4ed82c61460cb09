"""One package view for every tool: the layer folders at the repository top are the
subpackages of ``kbgraph`` through committed symlinks (``kbgraph/retrieval -> ../retrieval``
…), found by setuptools like any other package; nothing keeps a hand-written list, and a
layer imported under its bare name refuses loudly instead of loading a second copy."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from kbgraph._layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_is_a_committed_symlink_under_kbgraph(layer: str) -> None:
    link = ROOT / "kbgraph" / layer
    assert link.is_symlink() and os.readlink(link) == f"../{layer}"
    assert link.resolve() == (ROOT / layer).resolve()
    tracked = subprocess.run(
        ["git", "ls-files", "-s", f"kbgraph/{layer}"], cwd=ROOT, capture_output=True, text=True
    )
    if tracked.returncode == 0 and tracked.stdout:  # a git checkout: a symlink (mode 120000)
        assert tracked.stdout.startswith("120000")


def test_setuptools_finds_every_package_folder_and_nothing_else() -> None:
    config = _setuptools()
    assert "package-dir" not in config and set(config["packages"]) == {"find"}
    found = set(find_packages(where=str(ROOT), include=["kbgraph", "kbgraph.*"]))
    expected = set()
    for top in ("kbgraph", *LAYERS):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            expected.add(".".join(parts if top == "kbgraph" else ("kbgraph", *parts)))
    assert found == expected
    assert {name.split(".")[0] for name in found} == {"kbgraph"}


# The child catches the refusal and lists what the refused import left in sys.modules: a
# layer whose guard ran after its own imports kept 9 'retrieval.*' and 36 'evals.*' second
# copies there, whose classes are not kbgraph's.
_BARE_IMPORT = """
import sys
sys.path.insert(0, {root!r})
try:
    import {target}
except ImportError as error:
    print(error)
else:
    print("imported")
print(sorted(name for name in sys.modules if name.split(".")[0] in {layers!r}))
"""


@pytest.mark.parametrize("target", [*LAYERS, "retrieval.kb", "evals.records", "graphs.subgraph"])
def test_a_layer_imported_under_its_bare_name_refuses_and_leaves_nothing(target: str) -> None:
    layer = target.split(".")[0]
    code = _BARE_IMPORT.format(root=str(ROOT), target=target, layers=LAYERS)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"kbgraph's {layer!r} folder was imported as the top-level package {layer!r} (the "
        f"repository top is on sys.path); import it as 'kbgraph.{layer}' instead, so that "
        "one copy of each module is loaded",
        "[]",
    ]


def test_from_the_repository_top_the_layers_are_kbgraphs() -> None:
    code = (
        "import kbgraph.retrieval._config as c, kbgraph.graphs._settings as s\n"
        "assert s.SearchConfig is c.SearchConfig\n"
        "print(c.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == (ROOT / "retrieval" / "_config.py").resolve()
