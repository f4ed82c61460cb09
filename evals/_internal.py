"""The doorway of ``kbgraph.evals``: the evals' pieces the ready agents and the inspector
build on (the answer check's verdicts, the eval command group, source recall). Not public
API; the rules of every doorway are :func:`kbgraph._layers.lazy_doorway`'s."""

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
