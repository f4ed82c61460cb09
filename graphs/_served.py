"""Whether this process serves graphs behind kbgraph's request guard, and whether that
server may write indexes (issue 42 hole 2).

The guard (:mod:`kbgraph.graphs._served_guard`) stamps ``auto_index: false`` on what a
request creates, but a server also starts runs itself: a cron's runs, and the contexts it
stored before the guard stamped them (a cron made by an older kbgraph keeps ``auto_index:
true`` in ``.langgraph_api``). Those never pass the guard, so the Retrieve node asks here
as well: in a guarded process no run writes an index (``auto_index``, or ``live``: a
watcher's first run indexes the folder) unless the server was started with
``KBGRAPH_ALLOW_INDEX=1``. A process without the guard (a script, ``kbgraph ask``, a
LangGraph server that does not mount kbgraph's app) is not affected.

The same holds for code: a knowledge base's ``retriever`` is an import path whose object
(or the function of no arguments returning it) kbgraph calls, so a request naming one
could call any function of the server's Python (``os:abort`` stopped it). A served run may
name only the objects its graph was built with (``object:<name>``) and the import paths of
``KBGRAPH_ALLOWED_RETRIEVERS`` (comma-separated, set before the server starts): the guard
refuses any other in the request, and the importer refuses it in a guarded process, for
the runs the server starts itself.

And for connections: a knowledge base's ``store`` and ``read_store`` are URLs the server
connects to (a request naming ``postgresql://…@anyhost`` made it connect anywhere). A
served run may name only the server's own ``KBGRAPH_STORE`` and ``KBGRAPH_READ_STORE`` and
the URLs of ``KBGRAPH_ALLOWED_STORES``; the guard refuses others, and the searcher
registry refuses them in a guarded process.

And for models: every model spec a run names (``embedding``, ``chat_model``,
``answer_check.judge``) is the server's choice, not only those naming a place. A URL or a
``gguf:``/``local:`` path loads any file or reaches any server, a provider's model
(``openai:<model>``, ``huggingface:<model or folder>``) spends the server's API key on
whatever model a request names, and a provider spec whose model is a path loads a folder.
A served run may use a spec only when it is the server's own ``KBGRAPH_CHAT_MODEL`` or
``KBGRAPH_EMBEDDING`` or one of ``KBGRAPH_ALLOWED_MODELS``; without a listing it may name
what reaches nothing and spends nothing: no model, the packaged local model (``auto``,
``local``, ``local#int8``), the scripted ``fake`` and the ``offline``/``overlap`` judges
(the served graphs' defaults, so a plain request runs as before).

And for run records: ``record_runs`` writes each finished run into ``KBGRAPH_RUNS_DIR``
(the inspector's Runs view); in a guarded process no run records unless the server was
started with ``KBGRAPH_ALLOW_RECORD_RUNS=1`` (a request must not make the server write).

The list variables are read by one rule, and their URLs compared by one
(:mod:`kbgraph._base.allow_lists`: comma-separated, CSV quotes for an item holding a comma;
a URL's scheme and host without case)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from kbgraph._base.allow_lists import listed, url_key
from kbgraph.errors import ConfigError, NotServedError

from ._settings import masked_url

INDEX_ENV = "KBGRAPH_ALLOW_INDEX"
RECORD_ENV = "KBGRAPH_ALLOW_RECORD_RUNS"
RETRIEVERS_ENV = "KBGRAPH_ALLOWED_RETRIEVERS"
STORES_ENV = "KBGRAPH_ALLOWED_STORES"
SERVER_STORE_ENVS = ("KBGRAPH_STORE", "KBGRAPH_READ_STORE")
MODELS_ENV = "KBGRAPH_ALLOWED_MODELS"
SERVER_MODEL_ENVS = ("KBGRAPH_CHAT_MODEL", "KBGRAPH_EMBEDDING")
OWN_JUDGES = ("offline", "offline+verifier", "overlap")
"""Judges of kbgraph's own, no chat model: the default ``offline`` among them."""
FREE_MODELS = "none, fake, auto, local, local#int8 and the offline or overlap judge"
"""What a served run may name as a model without the server listing it (see the module)."""

_serving = 0


@contextlib.asynccontextmanager
async def serving(_app: Any) -> AsyncIterator[None]:
    """The lifespan of kbgraph's served apps (the server runs it from start to stop,
    before its crons): while it lasts, this process serves requests from outside. A
    lifespan rather than a flag set on import, so that importing an app (a test, a
    script) changes nothing in the process."""
    global _serving
    _serving += 1
    try:
        yield
    finally:
        _serving -= 1


def _switched_on(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def index_allowed() -> bool:
    """Whether the server was started to let runs write indexes."""
    return _switched_on(INDEX_ENV)


def index_refused() -> bool:
    """True in a guarded process started without ``KBGRAPH_ALLOW_INDEX``: ``auto_index``
    and ``live`` are then ignored, whatever context a run carries."""
    return _serving > 0 and not index_allowed()


def record_allowed() -> bool:
    """Whether the server was started to let runs write run records (``record_runs``)."""
    return _switched_on(RECORD_ENV)


def record_refused() -> bool:
    """True in a guarded process started without ``KBGRAPH_ALLOW_RECORD_RUNS``:
    ``record_runs`` is then ignored, whatever context a run carries (a cron's too)."""
    return _serving > 0 and not record_allowed()


def allowed_retrievers() -> tuple[str, ...]:
    """The import paths a served run may name as a ``retriever``: those of
    ``KBGRAPH_ALLOWED_RETRIEVERS``."""
    return listed(RETRIEVERS_ENV)


def retriever_refusal(ref: str) -> str | None:
    """Why a served run may not import the retriever ``ref`` (an import path, stripped as
    the settings strip it), else ``None``."""
    allowed = allowed_retrievers()
    if ref in allowed:
        return None
    return (
        f"the retriever {ref[:200]!r} is not one this server was started with (allowed: "
        f"{', '.join(allowed) or 'none'}); a request may not name code to import: list its "
        f"import path in {RETRIEVERS_ENV} before starting the server, or build a graph with "
        "build_rag_graph(knowledge_bases={name: store}) and name that graph in langgraph.json"
    )


def check_retriever(ref: str) -> None:
    """A ``NotServedError`` for a retriever a guarded process was not started with: runs
    the server starts itself (a cron's, a stored assistant's) never pass the guard."""
    refused = retriever_refusal(ref) if _serving > 0 else None
    if refused is not None:
        raise NotServedError(refused)


def allowed_stores() -> tuple[str, ...]:
    """The store URLs a served run may name (see the module docstring)."""
    return _started_with(SERVER_STORE_ENVS, STORES_ENV)


def _started_with(own: tuple[str, ...], listed_env: str) -> tuple[str, ...]:
    """The values of the server's own variables ``own`` and the items of ``listed_env``,
    in that order, each once."""
    given = [os.environ.get(name, "").strip() for name in own]
    return tuple(dict.fromkeys(v for v in [*given, *listed(listed_env)] if v))


def _among(value: str, allowed: tuple[str, ...]) -> bool:
    """Whether ``value`` is one of ``allowed``, its URLs compared by :func:`url_key`."""
    return url_key(value) in {url_key(a) for a in allowed}


def store_refusal(key: str, url: str) -> str | None:
    """Why a served run may not connect to ``url`` as its ``key`` (``store`` or
    ``read_store``, stripped as the settings strip it), else ``None``. Passwords are masked:
    the line goes back to the client and into logs."""
    allowed = allowed_stores()
    if _among(url, allowed):
        return None
    shown = ", ".join(masked_url(a) for a in allowed) or "none"
    return (
        f"the {key} {masked_url(url)[:200]!r} is not one this server was started with "
        f"(allowed: {shown}); a request connects only to the server's own stores: list the "
        f"URL in {STORES_ENV} (comma-separated; quote a URL of several hosts: "
        f'"postgresql://u@a,b/db") or set {SERVER_STORE_ENVS[0]} before starting the server'
    )


def check_stores(store: str | None, read_store: str | None) -> None:
    """A ``NotServedError`` for a store a guarded process was not started with (the runs
    the server starts itself never pass the guard)."""
    if _serving == 0:
        return
    for key, url in (("store", store), ("read_store", read_store)):
        refused = store_refusal(key, url) if url is not None else None
        if refused is not None:
            raise NotServedError(refused)


def run_may_choose(key: str, spec: str) -> bool:
    """Whether a served run may name the model ``spec`` as its ``key`` (``embedding``,
    ``chat_model`` or ``answer_check.judge``) without the server listing it: no model,
    the packaged local model, the scripted fake, kbgraph's own judges. Each is read with
    the parser that resolves it (a spec that parser refuses, the graph refuses too)."""
    text = spec.strip()
    if key != "embedding":
        if key == "answer_check.judge" and text.lower() in OWN_JUDGES:
            return True
        return text.lower() in ("", "none") or text.partition(":")[0].lower() == "fake"
    if text.lower() in ("", "auto", "none"):
        return True
    from kbgraph.retrieval._internal import parse_spec

    try:
        parsed = parse_spec(text)
    except ConfigError:
        return True
    # The packaged model, at fp32 or int8, is the server's own files: no place of a run's.
    packaged = {parse_spec(own).model for own in ("local", "local#int8")}
    if parsed.provider == "fake":
        return True
    return parsed.provider == "local" and parsed.base_url is None and parsed.model in packaged


def model_refusal(key: str, spec: str) -> str | None:
    """Why a served run may not use the model ``spec`` as its ``key``, else ``None``."""
    allowed = _started_with(SERVER_MODEL_ENVS, MODELS_ENV)
    if run_may_choose(key, spec) or _among(spec, allowed):
        return None
    shown = ", ".join(masked_url(a) for a in allowed) or "none"
    return (
        f"the {key} {masked_url(spec.strip())[:200]!r} is not a model this server was "
        f"started with (allowed: {shown}; and {FREE_MODELS}): a request may not choose a "
        f"model, a file or a server to spend the server's keys on; list the spec in "
        f"{MODELS_ENV} (comma-separated) or set {SERVER_MODEL_ENVS[0]} / "
        f"{SERVER_MODEL_ENVS[1]} before starting the server"
    )


def check_model(key: str, spec: str | None) -> None:
    """A ``NotServedError`` for a model spec a guarded process was not started with (the
    runs the server starts itself never pass the guard)."""
    refused = model_refusal(key, spec) if spec is not None and _serving > 0 else None
    if refused is not None:
        raise NotServedError(refused)


__all__ = [
    "FREE_MODELS",
    "INDEX_ENV",
    "MODELS_ENV",
    "OWN_JUDGES",
    "RECORD_ENV",
    "RETRIEVERS_ENV",
    "SERVER_MODEL_ENVS",
    "SERVER_STORE_ENVS",
    "STORES_ENV",
    "allowed_retrievers",
    "allowed_stores",
    "check_model",
    "check_retriever",
    "check_stores",
    "index_allowed",
    "index_refused",
    "model_refusal",
    "record_allowed",
    "record_refused",
    "retriever_refusal",
    "run_may_choose",
    "serving",
    "store_refusal",
]
