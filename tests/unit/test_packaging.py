"""The distribution installs one import name, ``kbgraph``: the layer folders at the
repository top map onto its subpackages (pyproject's ``package-dir``), and every folder
with an ``__init__.py`` is listed, so none is silently left out of the wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"retrieval", "graphs", "prompts", "evals"}


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]


def test_layers_map_under_kbgraph() -> None:
    mapping = _setuptools()["package-dir"]
    assert mapping == {"kbgraph": "kbgraph", **{f"kbgraph.{n}": n for n in LAYERS}}


def test_every_package_folder_is_listed_and_nothing_else() -> None:
    found = set()
    for top in ("kbgraph", *LAYERS):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            prefix = () if top == "kbgraph" else ("kbgraph",)
            found.add(".".join((*prefix, *rel)))
    listed = set(_setuptools()["packages"])
    assert listed == found
    assert {name.split(".")[0] for name in listed} == {"kbgraph"}
