"""``kbgraph inspect``: a local web app that shows why retrieval did what it did.

It sits above the graphs and the evals (it shows both): a search lab that runs the real
subgraph and shows each result's rank and score in every list, the source view with cited
lines highlighted, the index view (files, skips, versions, freshness), recorded runs as
timelines and ``kbgraph eval`` reports. It binds to loopback, serves only files the index
holds, writes nothing without a POST carrying its per-process token, and ships its own
assets (nothing is fetched from the internet).

    from kbgraph.inspector import InspectorConfig, create_app
    app = create_app(InspectorConfig.from_folders(["docs/"]))   # any ASGI server

``kbgraph.inspector:app`` is the same app mounted at ``/kbgraph/inspect`` beside
the context check, for ``langgraph.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

from ._config import InspectedBase, InspectorConfig, is_loopback

if TYPE_CHECKING:
    from ._app import create_app
    from ._command import allowed_hosts, listen, served_url
    from ._http_app import app
    from ._sources import RefusedPath, SourceText, check_relative, source_text

# Starlette loads with the app, not with the configuration. The source reads (only
# indexed files, inside the folder) and the loopback listening serve `kbgraph mcp` too.
__getattr__ = lazy_imports(globals())


__all__ = [
    "InspectedBase",
    "InspectorConfig",
    "RefusedPath",
    "SourceText",
    "allowed_hosts",
    "app",
    "check_relative",
    "create_app",
    "is_loopback",
    "listen",
    "served_url",
    "source_text",
]
