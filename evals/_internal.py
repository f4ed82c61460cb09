"""What the layers above use of ``kbgraph.evals`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.evals``). ``tests/unit/test_layers.py`` lets another layer import this layer's
private modules only through here, and reads ``_LAZY`` to see the real edges. Each name
loads its module on first use, as the face does, so a light import stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_attributes

if TYPE_CHECKING:
    from ._answer_check import (
        unsupported as unsupported,
    )
    from ._cli import (
        DefaultCommandGroup as DefaultCommandGroup,
    )
    from ._cli import (
        eval_group as eval_group,
    )
    from ._evaluators import (
        is_recalled as is_recalled,
    )
    from ._judges import (
        Judge as Judge,
    )
    from ._judges.scripted import (
        ScriptedJudge as ScriptedJudge,
    )
    from ._records import (
        GoldSource as GoldSource,
    )
    from ._records import (
        Passage as Passage,
    )
    from ._report import (
        SOURCE_RECALL as SOURCE_RECALL,
    )

_LAZY = {
    "DefaultCommandGroup": "._cli",
    "eval_group": "._cli",
    "GoldSource": "._records",
    "is_recalled": "._evaluators",
    "Judge": "._judges",
    "Passage": "._records",
    "ScriptedJudge": "._judges.scripted",
    "SOURCE_RECALL": "._report",
    "unsupported": "._answer_check",
}


__getattr__ = lazy_attributes(globals(), _LAZY)
