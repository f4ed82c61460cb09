"""The guard of every route of ``langgraph dev`` when ``langgraph.json`` names one of
kbgraph's apps, ``kbgraph.graphs:http_app`` or ``kbgraph.inspector:app`` (issue 42 hole
2). The server itself answers any Host and any Origin (``access-control-allow-origin:
*``), so a web page the user opens could POST ``/runs/wait`` through a DNS
name rebound to 127.0.0.1 and run a graph on any folder the user can read. In front of
every route (the server's own included) this checks:

- the Host: loopback names, or a name of ``KBGRAPH_ALLOW_HOSTS``, as the inspector's own
  guard does (421 otherwise);
- the Origin of a browser request: a page served from an answered host, or one of
  ``KBGRAPH_ALLOW_ORIGINS`` (default LangGraph Studio's, :data:`STUDIO_ORIGIN`), 403
  otherwise;
- the folders a context names (a run's, a cron's, an assistant's, and a knowledge base's
  ``index_dir``): inside the folders the
  server was started with (``KBGRAPH_ALLOWED_FOLDERS``, ``os.pathsep``-separated; else the
  folders of the app's own variables — the inspector's app adds ``KBGRAPH_INSPECT_FOLDERS`` —
  else ``KBGRAPH_FOLDER``, else the server's working folder), 403 otherwise;
- the code a context names: a knowledge base's ``retriever`` must be an object the served
  graph was built with (``object:<name>``) or an import path of
  ``KBGRAPH_ALLOWED_RETRIEVERS`` (:mod:`kbgraph.graphs._served`), 403 otherwise: the
  importer calls what it imports, so a request must not be able to name it;
- the connections a context names: a knowledge base's ``store`` and ``read_store`` must be
  the server's own ``KBGRAPH_STORE``/``KBGRAPH_READ_STORE`` or a URL of
  ``KBGRAPH_ALLOWED_STORES``, 403 otherwise;
- the model specs a context names (``embedding``, ``chat_model``, ``answer_check.judge``):
  the server's own or one of ``KBGRAPH_ALLOWED_MODELS``, unless it reaches nothing and
  spends nothing (no model, the packaged one, ``fake``, the offline judges; see
  :mod:`kbgraph.graphs._served`), 403 otherwise;
- writes: a run, a cron and an assistant are made (and a cron's or an assistant's context
  updated) with ``auto_index: false`` unless the server was started with
  ``KBGRAPH_ALLOW_INDEX=1`` (then index writes go only into the folders above), and with
  ``record_runs: false`` where the context asks to record, unless it was started with
  ``KBGRAPH_ALLOW_RECORD_RUNS=1``: a cron's runs are started by the server itself, past
  this guard, so the Retrieve node and the recorder also ignore ``auto_index`` and
  ``record_runs`` in a process this guard serves (:mod:`kbgraph.graphs._served`: a cron
  stored before this check keeps ``auto_index: true``).

Every list variable is read by one rule (:mod:`kbgraph._base.allow_lists`: comma-separated,
the folder lists by ``os.pathsep``, CSV quotes for an item holding the separator), and the
URLs of origins, stores and models are compared with their scheme and host without case."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from kbgraph._base.allow_lists import listed, url_key
from kbgraph._base.hosts import LOOPBACK_HOSTS, host_name

from ._http_body import body_then, buffered_body
from ._langchain_kb import OBJECT_PREFIX
from ._served import (
    INDEX_ENV,
    RETRIEVERS_ENV,
    STORES_ENV,
    index_allowed,
    model_refusal,
    record_allowed,
    retriever_refusal,
    serving,
    store_refusal,
)
from ._settings import FOLDER_ENV, knowledge_base_specs, resolved_folder, resolved_specs

HOSTS_ENV = "KBGRAPH_ALLOW_HOSTS"
ORIGINS_ENV = "KBGRAPH_ALLOW_ORIGINS"
ALLOWED_FOLDERS_ENV = "KBGRAPH_ALLOWED_FOLDERS"
STUDIO_ORIGIN = "https://smith.langchain.com,https://eu.smith.langchain.com"


def allowed_folders(folder_envs: tuple[str, ...] = ()) -> tuple[Path, ...]:
    """The folders runs may name (see the module docstring), resolved: the first of
    ``KBGRAPH_ALLOWED_FOLDERS``, then ``folder_envs``, then ``KBGRAPH_FOLDER`` that is set."""
    for name in (ALLOWED_FOLDERS_ENV, *folder_envs, FOLDER_ENV):
        if os.environ.get(name, "").strip():  # set: only its folders, even if it lists none
            return tuple(Path(resolved_folder(p)) for p in listed(name, sep=os.pathsep))
    return (Path.cwd().resolve(),)


def _inside(folder: Path, roots: tuple[Path, ...]) -> bool:
    return any(folder == root or folder.is_relative_to(root) for root in roots)


def _contexts(body: Any) -> Iterator[dict[str, Any]]:
    """Every context a body carries: each run's ``context`` and ``config.configurable``."""
    runs = body if isinstance(body, list) else [body]
    for run in runs:
        if not isinstance(run, dict):
            continue
        config = run.get("config")
        legacy = config.get("configurable") if isinstance(config, dict) else None
        yield from (c for c in (run.get("context"), legacy) if isinstance(c, dict))


def _context_specs(body: Any) -> Iterator[dict[str, Any]]:
    """Every knowledge base spec a run body's context names, as the graph reads it."""
    for context in _contexts(body):
        if "knowledge_bases" not in context:
            continue
        try:
            yield from knowledge_base_specs(context["knowledge_bases"])
        except (ValueError, TypeError):
            continue  # the graph's own check refuses it


def _model_specs(body: Any) -> Iterator[tuple[str, str]]:
    """(key, spec) of every model spec a body's contexts name: ``embedding``,
    ``chat_model`` and ``answer_check.judge``."""
    for context in _contexts(body):
        check = context.get("answer_check")
        judge = check.get("judge") if isinstance(check, dict) else None
        named = [("embedding", context.get("embedding")), ("chat_model", context.get("chat_model"))]
        for key, spec in [*named, ("answer_check.judge", judge)]:
            if isinstance(spec, str):
                yield key, spec


def _spec_problem(spec: dict[str, Any], roots: tuple[Path, ...]) -> str | None:
    """Why a knowledge base spec is refused, else ``None``. Judged as the graph opens it
    (:func:`resolved_specs`, the settings' own normalisation, never a copy of it)."""
    try:
        [kb] = resolved_specs([spec])
    except (ValueError, OSError, RuntimeError):  # a NUL byte, a link loop: nothing to open
        return _folder_refusal(str(spec.get("folder")), roots)
    if kb.retriever is not None:
        # ``object:<name>`` names an object the served graph was built with, nothing else.
        return None if kb.retriever.startswith(OBJECT_PREFIX) else retriever_refusal(kb.retriever)
    if not _inside(Path(kb.folder), roots):
        return _folder_refusal(str(spec["folder"]), roots)
    if kb.index_dir is not None and not _inside(Path(kb.index_dir), roots):
        return _folder_refusal(str(spec["index_dir"]), roots)
    for key, url in (("store", kb.store), ("read_store", kb.read_store)):
        refused = store_refusal(key, url) if url is not None else None
        if refused is not None:
            return refused
    return None


def _folder_refusal(raw: str, roots: tuple[Path, ...]) -> str:
    shown = os.pathsep.join(str(r) for r in roots)
    return (
        f"the folder {raw[:300]!r} is not one this server was started with "
        f"({shown}); set {ALLOWED_FOLDERS_ENV} before starting it to allow it"
    )


IN_PROCESS_HOST = "api"
"""The host of ``langgraph_sdk.get_client()`` without a URL: the server calling itself
through an ASGI transport (the context check asks it for schemas that way). A request from
a socket has the address it came in on as its ``server``, never a name."""


def _in_process(scope: Scope) -> bool:
    return (scope.get("server") or ("",))[0] == IN_PROCESS_HOST


_RUNS = re.compile(r"/runs(?:/stream|/wait|/batch|/crons)?/?$")
"""Requests that create runs, now or later: a cron's runs are started by the server
itself, never through this guard, so a cron gets ``auto_index: false`` when created."""
_STORED = re.compile(r"/(?:assistants|runs/crons)/[^/]+/?$")
"""Updates of a stored context (PATCH of an assistant or a cron): it gets ``auto_index:
false`` when it names one (a PATCH without a context keeps the one stored)."""
_ASSISTANTS = re.compile(r"/assistants/?$")


def _stamped(method: str, path: str) -> bool | None:
    """Whether a request's body gets ``auto_index: false``: True for one that creates runs
    or an assistant (a context added when it has none), False for an update of a stored
    context (only a context it sends), None for any other."""
    if method == "POST" and (_RUNS.search(path) or _ASSISTANTS.search(path)):
        return True
    if method == "PATCH" and _STORED.search(path) and not path.endswith(("/search", "/count")):
        return False
    return None


def _write_targets(body: Any, *, add: bool) -> Iterator[dict[str, Any]]:
    """The context of each run of ``body`` as the graph will read it: a run that passes
    its settings as ``config.configurable`` gets them there (the server refuses a run with
    both); ``add``: a context is added to a body without one."""
    for run in body if isinstance(body, list) else [body]:
        if not isinstance(run, dict):
            continue
        config = run.get("config")
        legacy = config.get("configurable") if isinstance(config, dict) else None
        if isinstance(legacy, dict) and not run.get("context"):
            yield legacy
            continue
        context = run.get("context")
        if isinstance(context, dict):
            yield context
        elif add and context is None:  # missing or null: the graph's defaults index
            added: dict[str, Any] = {}
            run["context"] = added
            yield added


def _no_writes(body: Any, *, add: bool = True) -> bool:
    """Sets ``auto_index: false`` in the context of each run of ``body`` unless the server
    was started with ``KBGRAPH_ALLOW_INDEX=1``, and ``record_runs: false`` where a context
    asks to record unless it was started with ``KBGRAPH_ALLOW_RECORD_RUNS=1``: a request
    may not make the server write. Whether anything changed; ``add``: see
    :func:`_write_targets`."""
    index, record = index_allowed(), record_allowed()
    changed = False
    for target in [] if index and record else _write_targets(body, add=add):
        if not index and target.get("auto_index") is not False:
            target["auto_index"] = False
            changed = True
        if not record and target.get("record_runs") not in (None, False):
            target["record_runs"] = False
            changed = True
    return changed


def _with_body(scope: Scope, body: bytes, later: Receive) -> tuple[Scope, Receive]:
    """The request with ``body`` in place of its own; then ``later`` (the client's own
    messages: a streamed run watches it for a disconnect)."""
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
    return scope, body_then(body, later)


def parse_body(raw: bytes) -> tuple[Any, tuple[int, str] | None]:
    """A request body as the server will read it, or a refusal. The server parses with
    orjson (1,024 levels deep); ``json.loads`` gives up sooner (Python's recursion limit,
    less the frames of this call), so a body nested ~950–1,024 deep would have reached the
    server with its context unchecked. Parsed by the same parser, a body that fails here
    fails there too; one too deep for the fallback parser is refused, never passed on."""
    loads: Callable[[bytes], Any] = json.loads
    try:
        import orjson

        loads = orjson.loads
    except ImportError:  # not a LangGraph server: the standard parser, deep bodies refused
        pass
    try:
        return loads(raw or b"null"), None
    except RecursionError:
        return None, (400, "the request body is nested too deeply to be checked; send it flatter")
    except ValueError:  # not JSON: the server refuses it as well
        return None, None


class ServedRequestsGuard:
    """Pure ASGI middleware in front of every route (see the module docstring)."""

    lifespan = staticmethod(serving)
    """The lifespan of an app this guard is in front of: while the server runs it, runs
    the server starts itself (a cron's) write no index unless it was started to allow it."""

    def __init__(self, app: ASGIApp, folder_envs: tuple[str, ...] = ()) -> None:
        self.app = app
        self.folder_envs = folder_envs

    def problem(self, scope: Scope, body: Any) -> tuple[int, str] | None:
        """(status, one line) for a request refused, else ``None``."""
        headers = Headers(scope=scope)
        hosts = (*LOOPBACK_HOSTS, *(name.lower() for name in listed(HOSTS_ENV)))
        host = headers.get("host", "")
        if host_name(host) not in hosts:
            return 421, (
                f"this server answers to loopback names only, not {host[:200]!r} (a DNS name "
                f"pointing at it could be another site's); use http://127.0.0.1:PORT or add "
                f"the name to {HOSTS_ENV}"
            )
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin, hosts):
            return 403, (
                f"requests from the page {origin[:200]!r} are refused: another site must not "
                f"drive this server; add the origin to {ORIGINS_ENV} to allow it"
            )
        roots = allowed_folders(self.folder_envs)
        for spec in _context_specs(body):
            refused = _spec_problem(spec, roots)
            if refused is not None:
                return 403, refused
        for key, model in _model_specs(body):
            refused = model_refusal(key, model)
            if refused is not None:
                return 403, refused
        return None

    @staticmethod
    def _origin_ok(origin: str, hosts: tuple[str, ...]) -> bool:
        if url_key(origin) in {url_key(o) for o in listed(ORIGINS_ENV, STUDIO_ORIGIN)}:
            return True
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and (parts.hostname or "") in hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _in_process(scope):
            await self.app(scope, receive, send)
            return
        body: Any = None
        problem: tuple[int, str] | None = None
        if scope["method"] in ("POST", "PATCH", "PUT"):  # runs, crons, assistants carry contexts
            raw, receive = await buffered_body(receive)
            body, problem = parse_body(raw)
        # Off the event loop: the folder check resolves paths (os.getcwd, lstat), and the
        # LangGraph dev server's blockbuster fails a request that blocks the loop — every
        # request answered 500 when no folder variable was set.
        if problem is None:
            problem = await anyio.to_thread.run_sync(self.problem, scope, body)
        if problem is None:
            stamped = _stamped(scope["method"], scope["path"])
            if stamped is not None and _no_writes(body, add=stamped):
                await receive()  # the buffered body, handed on once: skip it
                scope, receive = _with_body(scope, json.dumps(body).encode(), receive)
            await self.app(scope, receive, send)
            return
        status, detail = problem
        payload = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


__all__ = [
    "ALLOWED_FOLDERS_ENV",
    "HOSTS_ENV",
    "INDEX_ENV",
    "ORIGINS_ENV",
    "RETRIEVERS_ENV",
    "STORES_ENV",
    "STUDIO_ORIGIN",
    "ServedRequestsGuard",
    "allowed_folders",
]
