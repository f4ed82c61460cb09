"""``langgraph.json``'s HTTP app: the context check of :mod:`kbgraph.graphs._http_app` and
the inspector mounted under :data:`MOUNT` (``/kbgraph/inspect``), so Studio users open it
from the server they already run::

    "http": {"app": "kbgraph.inspector._http_app:app"}

The server merges this app's routes with its own and runs its middleware in front of every
route, its own included; the inspector is built on its first request, from the
environment (:meth:`~kbgraph.inspector._config.InspectorConfig.from_env`), and shows the
server's threads by id. It is a separate Starlette object from the context check's own
``app``: the server rewrites the routes and middleware of the app it is given."""

from __future__ import annotations

import threading

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from kbgraph.errors import KbgraphError
from kbgraph.graphs._internal import ContextKeysMiddleware, ServedRequestsGuard

from ._config import FOLDERS_ENV

MOUNT = "/kbgraph/inspect"


class LazyInspector:
    """Builds the inspector on the first request: a configuration error (a folder that is
    not there) then answers that request instead of stopping the server from starting."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None
        self._lock = threading.Lock()

    def _build(self) -> ASGIApp:
        with self._lock:
            if self._app is None:
                from ._app import create_app
                from ._config import InspectorConfig

                self._app = create_app(InspectorConfig.from_env())
            return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            # Off the event loop: building it resolves paths and opens indexes (disk I/O;
            # the LangGraph dev server's blockbuster fails a request that blocks the loop).
            inspector = self._app
            if inspector is None:
                inspector = await anyio.to_thread.run_sync(self._build)
        except KbgraphError as exc:  # e.g. KBGRAPH_INSPECT_FOLDERS names no folder
            response = PlainTextResponse(f"kbgraph inspect: {exc}", status_code=500)
            await response(scope, receive, send)
            return
        await inspector(scope, receive, send)


app = Starlette(
    routes=[Mount(MOUNT, app=LazyInspector())],
    # The guard first: a request refused for its Host, Origin or folders reaches nothing.
    middleware=[
        Middleware(ServedRequestsGuard, folder_envs=(FOLDERS_ENV,)),
        Middleware(ContextKeysMiddleware),
    ],
    lifespan=ServedRequestsGuard.lifespan,  # a cron's runs write no index either
)

__all__ = ["MOUNT", "LazyInspector", "app"]
