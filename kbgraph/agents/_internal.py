"""What the application above uses of ``kbgraph.agents`` beyond its face: kbgraph's own
contract between its layers, not public API (users import ``kbgraph.agents``). The
inspector shows a recorded run's steps as ``kbgraph ask --trace`` does. As the layers'
doorways (``kbgraph.retrieval._internal``), each name is written once, in the
``if TYPE_CHECKING:`` block, from which :func:`kbgraph._layers.lazy_doorway` derives the
lazy table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_doorway

if TYPE_CHECKING:
    from ._trace import summarize_step

__getattr__ = lazy_doorway(globals())
