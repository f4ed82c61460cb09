"""Where kbgraph keeps per-user files that can be rebuilt or thrown away: the ONNX exports
of the local model, BEIR work folders, recorded runs. ``$KBGRAPH_CACHE_DIR``, else
``$XDG_CACHE_HOME/kbgraph``, else ``~/.cache/kbgraph``."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "KBGRAPH_CACHE_DIR"


def cache_root() -> Path:
    """The per-user cache folder (not created here)."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "kbgraph"


__all__ = ["CACHE_ENV", "cache_root"]
