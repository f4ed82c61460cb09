"""What the layers above use of ``kbgraph.evals`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.evals``). A name the face exports is imported from the face, and a helper no
layer owns from ``kbgraph._base``; only what the layers above need of this layer's private
modules is lent here. ``tests/unit/test_layers.py`` lets another layer import this layer's
private modules only through here, and reads these imports to see the real edges.

Each name is written once, in the ``if TYPE_CHECKING:`` block below: the type checker reads
it, and at run time :func:`kbgraph._layers.lazy_doorway` derives the lazy table from it, so
that each name loads its module on first use, as the face's do, and a light import stays
light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_doorway

if TYPE_CHECKING:
    from ._answer_check import unsupported
    from ._cli import eval_group
    from ._evaluators import is_recalled
    from ._judges.scripted import ScriptedJudge
    from ._report import SOURCE_RECALL

__getattr__ = lazy_doorway(globals())
