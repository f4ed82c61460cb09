"""The doorway of ``kbgraph.agents``: the trace's step summaries the inspector shows as
``kbgraph ask --trace`` does. Not public API; the rules of every doorway are
:func:`kbgraph._layers.lazy_doorway`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_doorway

if TYPE_CHECKING:
    from ._trace import summarize_step

__getattr__ = lazy_doorway(globals())
