"""Warnings logged by modules every search imports, without importing ``logging`` for them.

Why: ``logging`` (with ``string``, ``traceback`` and their patterns) is ~2 % of a cold
``kbgraph search --mode bm25`` (issue 44), and those modules log only rarely (a stale
index, a lost server, a damaged ANN graph). ``logging`` is imported on the first warning;
the logger names stay the ones a user configures (``kbgraph.retrieval``)."""

from __future__ import annotations


def warn(name: str, message: str, *args: object) -> None:
    """``logging.getLogger(name).warning(message, *args)``, importing ``logging`` now."""
    import logging

    logging.getLogger(name).warning(message, *args, stacklevel=2)
