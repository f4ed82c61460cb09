"""The doorway of ``kbgraph.agents``: the trace's step summaries the inspector shows as
``kbgraph ask --trace`` does. Not public API; what every doorway holds to:
``tests/unit/test_doorways.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

if TYPE_CHECKING:
    from ._trace import summarize_step

__getattr__ = lazy_imports(globals())
