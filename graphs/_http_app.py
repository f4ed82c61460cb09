"""The custom HTTP app of ``langgraph.json``: a run whose ``context`` has a key its graph
does not know is refused (422) instead of run without it, and one whose value one of
kbgraph's graphs refuses is refused (422) in one line instead of failing as it starts.

langgraph-api removes the top-level context keys that are not in the graph's context schema
before the graph runs (``langgraph_api/stream.py``, logged at debug level only), so a typo
such as ``knowledge_base`` for ``knowledge_bases`` ran on the defaults and found nothing, and
no check inside the graph can see the key. The server applies a custom app's middleware to
every route, its own included, so declaring

    "http": {"app": "kbgraph.graphs._http_app:app"}

puts :class:`ContextKeysMiddleware` in front of the runs, batches of runs, crons and
assistants the server is asked to create or update. It reads the request's JSON body, asks
the server in process (``langgraph_sdk.get_client()`` with no URL) for the context schema of
the graph the request names, and answers ``{"detail": ...}`` with the same one line a
``ConfigError`` has in process. Any graph is checked against its own schema; a graph whose
schema lists no keys, a body that is not JSON and an assistant the server does not know pass
through to the server's own answer.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any
from uuid import UUID

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from kbgraph._base.validation import likely_setting, unknown_setting
from kbgraph.errors import ConfigError

from ._http_body import buffered_body
from ._served_guard import ServedRequestsGuard
from ._settings import RagSettings

logger = logging.getLogger("kbgraph.graphs")

# The requests that carry a context, by method and path (the path may sit under a prefix).
_RUN = re.compile(r"/runs(?:/stream|/wait|/crons)?/?$")
_BATCH = re.compile(r"/runs/batch/?$")
_NEW_ASSISTANT = re.compile(r"/assistants/?$")
_ASSISTANT = re.compile(r"/assistants/(?P<id>[^/]+)/?$")
# An assistant's context schema is read from the server (120 ms over loopback here) once per
# this many seconds; another process serving the same database may change its graph.
ASSISTANT_TTL = 30.0
# How alike a ``config.configurable`` key must be to a setting to count as a misspelling of
# it (difflib's ratio: 'knowledge_base' / 'knowledge_bases' 0.97, 'embeding' 0.94; 'model'
# / 'chat_model' 0.67 is left alone).
NEAR_MISS = 0.8


class ContextKeysMiddleware:
    """Refuses a context key its graph's context schema does not list (pure ASGI, so the
    server's streamed responses pass through untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # by graph id (for good) or assistant id (for ASSISTANT_TTL seconds, and until a
        # request through here updates or deletes it: an update may change its graph)
        self._schemas: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._client: Any = None  # the in-process langgraph_sdk client, made on first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PATCH", "DELETE"):
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST" and (match := _ASSISTANT.search(scope["path"])):
            self._schemas.pop(match["id"], None)
        if scope["method"] == "DELETE":
            await self.app(scope, receive, send)
            return
        body, receive = await buffered_body(receive)
        problem = await self._problem(scope, body)
        if problem is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(send, problem)

    async def _problem(self, scope: Scope, body: bytes) -> str | None:
        try:
            targets = list(_targets(scope["method"], scope["path"], json.loads(body or b"null")))
        except (ValueError, RecursionError):
            return None  # not JSON (or nested past Python's parser): the server says so
        for target, context, legacy in targets:
            try:
                schema = await self._schema(target)
            except Exception as exc:  # an unknown assistant: the server answers 404
                logger.debug("no context schema for %s: %s", target, exc)
                continue
            if schema and (
                problem := unknown_context_keys(context, schema, legacy)
                or refused_context(context, schema, legacy)
            ):
                return problem + (" (in config.configurable)" if legacy else "")
        return None

    async def _schema(self, target: str) -> dict[str, Any] | None:
        """The context schema of the graph ``target`` names, an assistant id or a graph id."""
        now = time.monotonic()
        cached = self._schemas.get(target)
        if cached is None or (_is_uuid(target) and now - cached[0] > ASSISTANT_TTL):
            cached = self._schemas[target] = (now, await self._lookup(target))
        return cached[1]

    async def _lookup(self, target: str) -> dict[str, Any] | None:
        """Asks the server in this process (no network) for the context schema."""
        if self._client is None:
            from langgraph_sdk import get_client

            self._client = get_client()  # no URL: the in-process server
        assistant = target
        if not _is_uuid(target):  # a graph id: its default assistant
            found = await self._client.assistants.search(
                graph_id=target, metadata={"created_by": "system"}, limit=1
            )
            assistant = found[0]["assistant_id"]
        schemas = await self._client.assistants.get_schemas(assistant)
        return schemas.get("context_schema")


def unknown_context_keys(
    context: dict[str, Any], schema: dict[str, Any], near_misses_only: bool = False
) -> str | None:
    """The refusal of the first top-level key of ``context`` that ``schema`` (a context
    JSON schema) does not list, naming the others; None when all are listed or the schema
    lists none (the server then drops nothing). ``near_misses_only``: only keys that look
    like a misspelt setting count (``config.configurable``, which the server copies into
    the context when none is given, also carries keys of other uses, e.g. ``thread_id``)."""
    properties = schema.get("properties") or {}
    if not properties:
        return None
    inner = {name: _inner_keys(schema, spec) for name, spec in properties.items()}
    unknown = [
        key
        for key in context
        if key not in properties
        and (not near_misses_only or likely_setting(key, properties, inner, NEAR_MISS))
    ]
    if not unknown:
        return None
    message = unknown_setting(
        str(schema.get("title") or "The context"), unknown[0], properties, inner
    )
    if len(unknown) > 1:
        message += f" (also unknown: {', '.join(repr(k) for k in unknown[1:])})"
    return message


def refused_context(
    context: dict[str, Any], schema: dict[str, Any], legacy: bool = False
) -> str | None:
    """The ``ConfigError`` line of a context one of kbgraph's graphs (context schema
    :class:`RagSettings`) refuses, checked as the graph checks it; None when it takes it or
    the graph is another. Its keys passed, but a wrong value (``knowledge_bases`` a mapping
    of names to objects, a ``top_k`` of 0) failed the run as it started, and langgraph-api
    logged the error with a traceback (twice) instead of the client hearing one line.
    ``legacy``: ``config.configurable``, of which only the settings' keys count."""
    if not _is_rag_settings(schema):
        return None
    values = {k: v for k, v in context.items() if k in RagSettings.model_fields or not legacy}
    try:
        RagSettings.model_validate(values)
    except ConfigError as exc:
        return str(exc)
    return None


def _is_rag_settings(schema: dict[str, Any]) -> bool:
    properties = schema.get("properties") or {}
    return schema.get("title") == RagSettings.__name__ and set(properties) == set(
        RagSettings.model_fields
    )


def _inner_keys(schema: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """The keys of the object a property holds: its own, or those of a ``$ref`` to
    ``$defs``, directly or in an ``anyOf`` / ``oneOf`` / ``allOf``."""
    keys: list[str] = list(spec.get("properties") or {})
    ref = spec.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        keys += list(
            (schema.get("$defs") or {}).get(ref.rsplit("/", 1)[1], {}).get("properties") or {}
        )
    for option in (*spec.get("anyOf", ()), *spec.get("oneOf", ()), *spec.get("allOf", ())):
        if isinstance(option, dict):
            keys += _inner_keys(schema, option)
    return keys


def _targets(method: str, path: str, body: Any) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(assistant or graph id, context, whether it came as ``config.configurable``) for each
    context the request carries."""
    if method == "POST" and _BATCH.search(path) and isinstance(body, list):
        runs = [run for run in body if isinstance(run, dict)]
    elif method == "POST" and _RUN.search(path) and isinstance(body, dict):
        runs = [body]
    elif isinstance(body, dict) and (
        (method == "POST" and _NEW_ASSISTANT.search(path))
        or (method == "PATCH" and _ASSISTANT.search(path))
    ):
        match = _ASSISTANT.search(path) if method == "PATCH" else None
        owner = body.get("graph_id") or (match["id"] if match else None)
        runs = [{**body, "assistant_id": owner}]
    else:
        runs = []
    for run in runs:
        owner, context = run.get("assistant_id"), run.get("context")
        config = run.get("config")
        legacy = config.get("configurable") if isinstance(config, dict) else None
        if not isinstance(owner, str):
            continue
        if isinstance(context, dict) and context:
            yield owner, context, False
        elif not context and isinstance(legacy, dict) and legacy:
            yield owner, legacy, True


def _is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


async def _refuse(send: Send, detail: str) -> None:
    payload = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send({"type": "http.response.start", "status": 422, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


# The guard first: a request refused for its Host, Origin or folders reaches nothing.
# Its lifespan marks the process as served: runs the server starts itself obey it too.
app = Starlette(
    middleware=[Middleware(ServedRequestsGuard), Middleware(ContextKeysMiddleware)],
    lifespan=ServedRequestsGuard.lifespan,
)

# The name the face exports (``kbgraph.graphs:http_app`` in a langgraph.json).
http_app = app

__all__ = ["ContextKeysMiddleware", "app", "refused_context", "unknown_context_keys"]
