"""The doorway of ``kbgraph.evals``: the evals' pieces the ready agents and the inspector
build on (the answer check's verdicts, the eval command group, source recall). Not public
API; what every doorway holds to: ``tests/unit/test_doorways.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

if TYPE_CHECKING:
    from ._answer_check import unsupported
    from ._cli import eval_group
    from ._evaluators import is_recalled
    from ._judges.scripted import ScriptedJudge
    from ._report import SOURCE_RECALL

__getattr__ = lazy_imports(globals())
