"""Recorded runs, for ``kbgraph inspect``'s Runs view.

With ``RagSettings(record_runs=True)`` (``kbgraph ask --record``), each run of the
subgraph or the chat agent is written, when it ends, as one JSON file into
:func:`runs_dir` (``$KBGRAPH_RUNS_DIR``, else ``runs/`` in kbgraph's per-user cache
folder): the final state (every node's debug step, fallbacks, overrulings, queries,
candidates, context, citations, the answer and its check) with the settings it ran with
(store passwords masked). Only the outermost graph records: the subgraph inside the chat
agent leaves the record to the agent, which holds the answer too. A run that records says
so with a custom stream event ``knowledge.run.recorded`` (``{id, path}``). Recording never
fails a run: a folder that cannot be written is logged and the run goes on.

In a process serving requests behind kbgraph's guard (``langgraph dev`` with kbgraph's
app) no run records unless the server was started with ``KBGRAPH_ALLOW_RECORD_RUNS=1``: a
request must not make the server write (:mod:`kbgraph.graphs._served`).

Files are private (folder 0700, files 0600), written atomically, named by the run id
(``<UTC time>-<random>``), which :func:`read_run` checks before it opens anything.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph.message import add_messages

from kbgraph._base.cache import cache_root
from kbgraph._base.camel import snake_keys
from kbgraph.errors import ConfigError
from kbgraph.retrieval import write_file_atomic
from kbgraph.retrieval._internal import read_regular_file

from ._nodes import question_of
from ._served import record_refused
from ._settings import RagSettings, _without_password, settings_from_runtime
from ._state import reduce_candidates, reduce_debug

logger = logging.getLogger("kbgraph.graphs")

RUNS_ENV = "KBGRAPH_RUNS_DIR"
RECORD_KIND = "kbgraph.run"
RECORD_FORMAT = 1
RECORDED_EVENT = "knowledge.run.recorded"
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{8}")
_LISTED = 500  # the newest runs a listing reads; older files stay on disk
# A record is read whole; none is near this. Read non-blocking: a FIFO named like a run
# (which no process writes) would block the open, and the server's shutdown with it.
_MAX_RECORD_BYTES = 64 * 1024 * 1024
_REDUCERS: dict[str, Callable[[Any, Any], Any]] = {
    "messages": add_messages,
    "rag_retrieval_debug": reduce_debug,
    "rag_candidates": reduce_candidates,
}

Node = Callable[..., dict[str, Any]]


def runs_dir() -> Path:
    """Where runs are recorded: ``$KBGRAPH_RUNS_DIR``, else ``<cache>/runs``."""
    explicit = os.environ.get(RUNS_ENV, "").strip()
    return Path(explicit).expanduser() if explicit else cache_root() / "runs"


def new_run_id(now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{secrets.token_hex(4)}"


def message_dict(message: Any) -> dict[str, Any]:
    """A message as ``{role, content}`` (``human``, ``ai``, ``tool``, ``system``)."""
    if isinstance(message, BaseMessage):
        return {"role": message.type, "content": message.text}
    if isinstance(message, Mapping):
        return {"role": str(message.get("role") or message.get("type") or "?"),
                "content": str(message.get("content") or "")}  # fmt: skip
    return {"role": "?", "content": str(message)}


def run_record(
    state: Mapping[str, Any],
    settings: RagSettings,
    graph: str,
    *,
    question: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """The JSON record of a finished run (``state`` is its final state; ``question``: the
    run's question when the state no longer says it, e.g. a ``rag_query`` the run
    cleared)."""
    values = {k: v for k, v in state.items() if k != "remaining_steps"}
    values["messages"] = [message_dict(m) for m in values.get("messages") or []]
    data = settings.to_dict()
    data["knowledge_bases"] = [_without_password(kb) for kb in data.get("knowledge_bases", [])]
    meta = metadata or {}
    return {
        "kind": RECORD_KIND,
        "format": RECORD_FORMAT,
        "id": run_id or new_run_id(),
        "graph": graph,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "thread_id": _opt(meta.get("thread_id")),
        "run_id": _opt(meta.get("run_id")),
        "question": question if question is not None else question_of(dict(state)),
        "knowledge_bases": [
            {"name": kb.name, "folder": kb.folder} for kb in settings.resolved_knowledge_bases()
        ],
        "settings": data,
        "state": json.loads(json.dumps(values, ensure_ascii=False, default=str)),
    }


def write_run(record: Mapping[str, Any], folder: Path | None = None) -> Path:
    """Write ``record`` as ``<folder>/<id>.json`` (private, atomic)."""
    folder = runs_dir() if folder is None else folder
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{record['id']}.json"
    write_file_atomic(path, json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8"))
    return path


def read_run(run_id: str, folder: Path | None = None) -> dict[str, Any]:
    """The record of ``run_id``; ``ConfigError`` for an id that is not one, or a run that
    is not there (or not a record)."""
    if not RUN_ID.fullmatch(run_id):
        raise ConfigError(f"{run_id!r} is not a run id; ids look like 20261126T101500-0a1b2c3d")
    path = (runs_dir() if folder is None else folder) / f"{run_id}.json"
    try:
        record = json.loads(read_regular_file(path, _MAX_RECORD_BYTES).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"no recorded run {run_id} in {path.parent} ({exc})") from exc
    if not isinstance(record, dict) or record.get("kind") != RECORD_KIND:
        raise ConfigError(f"{path} is not a recorded kbgraph run")
    # A run recorded before 0.2 spells its citations and candidates camelCase.
    return snake_keys(record, f"the recorded run {run_id}", stacklevel=2)


def list_runs(folder: Path | None = None) -> list[dict[str, Any]]:
    """The recorded runs, newest first, without their state: ``{id, graph, created,
    question, knowledge_bases, grounded, answer_mode, thread_id}``. Files that do not
    read as records are left out."""
    folder = runs_dir() if folder is None else folder
    if not folder.is_dir():
        return []
    # Newest first: by the id's time, then (runs of the same second) by the file's.
    paths = [p for p in folder.glob("*.json") if RUN_ID.fullmatch(p.stem)]
    paths.sort(key=lambda p: (p.stem[:15], _mtime(p)), reverse=True)
    names = [p.stem for p in paths[:_LISTED]]
    out: list[dict[str, Any]] = []
    for run_id in names:
        try:
            record = read_run(run_id, folder)
        except ConfigError:
            continue
        out.append(_summary(run_id, record))
    return out


def _summary(run_id: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A listing's line of a record, each field of the type it should have (a record is a
    file anyone may have edited: a wrong type shows as missing, never fails the list)."""
    found = record.get("state")
    state: Mapping[str, Any] = found if isinstance(found, dict) else {}
    summary: dict[str, Any] = {"id": run_id}
    for key in ("graph", "created", "question", "thread_id"):
        value = record.get(key)
        summary[key] = value if isinstance(value, str) else None
    bases = record.get("knowledge_bases")
    summary["knowledge_bases"] = [
        {"name": str(kb.get("name") or ""), "folder": str(kb.get("folder") or "")}
        for kb in (bases if isinstance(bases, list) else [])
        if isinstance(kb, dict)
    ]
    grounded = state.get("rag_grounded")
    summary["grounded"] = grounded if isinstance(grounded, bool) else None
    mode = state.get("answer_mode")
    summary["answer_mode"] = mode if isinstance(mode, str) else None
    return summary


def merged_state(state: Mapping[str, Any], update: Mapping[str, Any] | None) -> dict[str, Any]:
    """``state`` after a node's ``update`` (the reducers of the keys that have one)."""
    out = dict(state)
    for key, value in (update or {}).items():
        reducer = _REDUCERS.get(key)
        out[key] = reducer(out.get(key), value) if reducer is not None else value
    return out


def recording(
    node: Node, graph: str, ends: Callable[[Mapping[str, Any]], bool] | None = None
) -> Node:
    """``node`` (``(state)`` or ``(state, runtime)``), recording the run when the node ends
    it (``ends(state after the node)``; ``None``: always) and the run asks for it."""
    takes_runtime = len(inspect.signature(node).parameters) >= 2

    def recorded(state: Mapping[str, Any], runtime: Any) -> dict[str, Any]:
        update = node(state, runtime) if takes_runtime else node(state)
        settings = settings_from_runtime(runtime)
        # A served run (a cron's too, past the guard) writes only where the server allows.
        if settings.record_runs and not record_refused():
            final = merged_state(state, update)
            if ends is None or ends(final):
                _record(final, settings, graph, runtime, question_of(dict(state)))
        return update

    recorded.__name__ = getattr(node, "__name__", "node")
    recorded.__doc__ = node.__doc__
    return recorded


def _record(
    state: Mapping[str, Any], settings: RagSettings, graph: str, runtime: Any, question: str
) -> None:
    config = _config()
    if "|" in str((config.get("configurable") or {}).get("checkpoint_ns") or ""):
        return  # a graph inside another: the outermost one records the run
    metadata = config.get("metadata")
    try:
        path = write_run(run_record(state, settings, graph, question=question, metadata=metadata))
    except OSError as exc:
        logger.warning("could not record the run in %s: %s", runs_dir(), exc)
        return
    writer = getattr(runtime, "stream_writer", None)
    if callable(writer):
        writer({"event": RECORDED_EVENT, "id": path.stem, "path": str(path)})


def _config() -> dict[str, Any]:
    from langgraph.config import get_config

    try:
        return dict(get_config())
    except RuntimeError:  # called outside a graph run (a test calling a node directly)
        return {}


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:  # removed meanwhile: read_run will say so
        return 0


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


__all__ = [
    "RECORDED_EVENT",
    "RECORD_FORMAT",
    "RECORD_KIND",
    "RUNS_ENV",
    "RUN_ID",
    "list_runs",
    "merged_state",
    "message_dict",
    "new_run_id",
    "read_run",
    "recording",
    "run_record",
    "runs_dir",
    "write_run",
]
