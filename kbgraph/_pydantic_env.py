"""What a ``kbgraph`` command sets before pydantic builds its first model (imported by the CLI
only, before any settings model is defined).

Why: pydantic looks for plugins (the ``pydantic`` entry-point group) when it builds a model's
validator, through ``pydantic.plugin._loader``, whose import alone imports
``importlib.metadata`` (``email``, ``zipfile``, ``csv`` ...) and whose first call reads the
entry points of every installed distribution: ~0.05 CPU-s of a cold
``kbgraph search --mode bm25`` of ~0.36 (issue 44), for plugins a command never has (it runs
no user code that could have asked for one).

So the CLI sets ``PYDANTIC_DISABLE_PLUGINS=__all__`` (pydantic's own switch; a value the user
set wins, so ``PYDANTIC_DISABLE_PLUGINS=`` brings plugins back), and while every plugin is
off it registers :data:`LOADER` in ``pydantic.plugin._loader``'s place: its
:func:`get_plugins` answers what pydantic's answers then (no plugins) without the
``importlib.metadata`` import. Any other name asked of it loads pydantic's real loader, so
a pydantic that needs more of that module than ``get_plugins`` still gets it. Library users'
processes are left alone.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable

SWITCH = "PYDANTIC_DISABLE_PLUGINS"
ALL_OFF = ("__all__", "1", "true")  # the values pydantic reads as "no plugin at all"
LOADER_NAME = "pydantic.plugin._loader"


def get_plugins() -> Iterable[object]:
    """No plugins, as pydantic's ``get_plugins`` answers while they are all switched off."""
    return ()


def _real(name: str) -> object:
    """Any other attribute: pydantic's own loader module, imported in this one's place.
    Dunder names are the import system's and ``repr``'s questions (``__path__``,
    ``__file__``), answered as for any module without them."""
    if name.startswith("__"):
        raise AttributeError(f"module {LOADER_NAME!r} has no attribute {name!r}")
    if sys.modules.get(LOADER_NAME) is LOADER:
        del sys.modules[LOADER_NAME]
    return getattr(importlib.import_module(LOADER_NAME), name)


LOADER = types.ModuleType(LOADER_NAME, "kbgraph's stand-in while every plugin is off")
LOADER.get_plugins = get_plugins  # type: ignore[attr-defined]
LOADER.__getattr__ = _real  # type: ignore[method-assign]


def install() -> None:
    """Switch plugins off unless the user chose, and skip the loader's import if all are."""
    os.environ.setdefault(SWITCH, "__all__")
    if os.environ[SWITCH] in ALL_OFF:
        sys.modules.setdefault(LOADER_NAME, LOADER)  # an already imported loader stays


install()
