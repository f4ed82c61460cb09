"""The title ranker: BM25 over a chunk's file path and section heading only, where a
query naming a document ("the webhooks guide", ``retry_policy.py``) finds it even when its
body says those words rarely. Out of hybrid unless weighed (``--weight title=0.5``)."""

from __future__ import annotations

import re

from ..records import Chunk
from ._registry import FieldRanker

_SEPARATORS = re.compile(r"[/\\._-]+")


def title_text(chunk: Chunk) -> str:
    """The path's parts as words (``docs/retry_policy.md`` → ``docs retry policy md``)
    and the heading path."""
    path = _SEPARATORS.sub(" ", chunk.source)
    return f"{path}\n{chunk.section}" if chunk.section else path


TITLE = FieldRanker(
    name="title",
    description="BM25 over each chunk's file path and section heading",
    text=title_text,
)
