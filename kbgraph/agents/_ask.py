"""``kbgraph ask FOLDER "question"``: the chat agent from the command line.

Prints the answer, the numbered sources with paths and line ranges, and the grounding
verdict; ``--trace`` adds the node-by-node decisions; ``--json`` prints only JSON on stdout
(the answer, the ``rag_*`` keys and the conversation as ``messages``). ``--history FILE``
continues a conversation: FILE holds a JSON list of messages (``{"role": "user" |
"assistant", "content": ...}``) or the ``--json`` output of the previous question, so a
follow-up can be asked as::

    kbgraph ask docs "What does error HB-601 mean?" --json > turn1.json
    kbgraph ask docs "Is it retryable?" --history turn1.json

Indexing progress goes to stderr. A failure exits non-zero with a one-line reason (2 for a
configuration error, 1 otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import click
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages

from kbgraph._base.commands import index_dir_opt
from kbgraph._exit_codes import failing_as, printable
from kbgraph.errors import ConfigError, KbgraphError, error_from_record
from kbgraph.graphs import TURN_KEY
from kbgraph.graphs._internal import RECORDED_EVENT, retrieve_records
from kbgraph.retrieval._internal import spec_forms

from ._trace import check_lines, source_lines, trace_lines, unresolved_lines, verdict_lines

EventSink = Callable[[Mapping[str, Any]], None]
CITATION_KEYS = ("n", "source", "line_start", "line_end", "chunk_id", "score", "text")


def check_specs(embedding: str, chat_model: str | None) -> None:
    """Fail before any work on a spec that cannot work."""
    from kbgraph.graphs import resolve_chat_model
    from kbgraph.retrieval._internal import parse_spec

    if embedding.strip().lower() not in ("auto", "none"):
        parse_spec(embedding)
    try:
        resolve_chat_model(chat_model)
    except KbgraphError:
        raise
    # Provider clients raise their own errors (a missing API key, say); one line is enough.
    except Exception as exc:
        raise ConfigError(f"chat model {chat_model!r} could not be created: {exc}") from exc


def run_ask(
    folder: Path,
    question: str,
    *,
    embedding: str = "auto",
    chat_model: str | None = None,
    top_k: int = 5,
    history: Sequence[HumanMessage | AIMessage] = (),
    on_event: EventSink | None = None,
    record: bool = False,
    knowledge_bases: Sequence[Mapping[str, Any]] | None = None,
    auto_index: bool = True,
    llm_timeout: float | None = None,
    index_dir: Path | None = None,
) -> dict[str, Any]:
    """Run the chat agent once on ``folder``, after the messages of ``history``; return the
    final state. Custom stream events (``knowledge.*``) go to ``on_event`` as they happen.
    ``record``: write the run for ``kbgraph inspect`` (``RagSettings.record_runs``).
    ``knowledge_bases``: the knowledge base specs to search instead of ``folder`` alone
    (``kbgraph mcp`` serves several); ``auto_index=False`` never writes an index;
    ``llm_timeout``: ``RagSettings.llm_timeout_seconds`` (``None``: its default);
    ``index_dir``: where ``folder``'s index lives (``kbgraph index --index-dir``), with
    ``folder`` alone."""
    from kbgraph.graphs import RagSettings
    from kbgraph.retrieval import SearchConfig

    from ._chat import exported_chat_agent
    from ._state import AgentInput

    check_specs(embedding, chat_model)
    spec: dict[str, Any] = {"folder": str(folder)}
    if index_dir is not None:
        if knowledge_bases:
            raise ConfigError(
                "index_dir is for the index of `folder` alone; give each of knowledge_bases "
                "its own 'index_dir' instead."
            )
        spec["index_dir"] = str(index_dir)
    default_timeout = RagSettings.model_fields["llm_timeout_seconds"].default
    settings = RagSettings(
        knowledge_bases=list(knowledge_bases or [spec]),  # type: ignore[arg-type]
        embedding=embedding,
        auto_index=auto_index,
        chat_model=chat_model,
        search=SearchConfig(top_k=top_k),
        record_runs=record,
        llm_timeout_seconds=default_timeout if llm_timeout is None else llm_timeout,
    )
    final: dict[str, Any] = {}
    request: AgentInput = {"messages": [*history, HumanMessage(question)]}
    for namespace, mode, data in exported_chat_agent().stream(
        request,
        context=settings,
        stream_mode=["custom", "values"],
        subgraphs=True,
    ):
        if mode == "custom" and on_event is not None and isinstance(data, Mapping):
            on_event(data)
        elif mode == "values" and not namespace and isinstance(data, Mapping):
            final = dict(data)
    raise_on_retrieval_failure(final)
    return final


def raise_on_retrieval_failure(state: Mapping[str, Any]) -> None:
    """Searching failed (not merely found nothing) when no source came back and the Retrieve
    node recorded errors: raise the first one, as the error it was (an index of another
    embedding model is a ``ModelMismatchError``, exit 7), instead of a not-found answer."""
    if state.get("rag_citations"):
        return
    for data in retrieve_records(state):
        for kb, records in (data.get("errors") or {}).items():
            if records:
                raise error_from_record(records[0], f"searching {kb} failed: ")


def json_view(state: Mapping[str, Any]) -> dict[str, Any]:
    """The answer (how it was made, why the chat model was not used, what of the sources it
    was shown), its citations, every ``rag_*`` key and the conversation; sources as
    ``{n, source, line_start, line_end, chunk_id, score, text}``."""
    out: dict[str, Any] = {
        key: state.get(key)
        for key in (
            "answer",
            "answer_mode",
            "answer_error",
            "answer_trimmed",
            "answer_citations",
            "answer_unresolved",
            "answer_check",
        )
    }
    out.update({k: v for k, v in state.items() if k.startswith("rag_")})
    out["rag_citations"] = [
        {key: c.get(key) for key in CITATION_KEYS} for c in state.get("rag_citations") or []
    ]
    out["messages"] = message_dicts(state.get("messages") or [])
    return out


def message_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The conversation as ``{role, content}`` dicts (what ``--history`` reads back); a
    reply keeps its turn marker, which tells the next turn whether it was grounded."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AIMessage) and message.text.strip():
            item: dict[str, Any] = {"role": "assistant", "content": message.text}
            marker = message.response_metadata.get(TURN_KEY)
            if marker is not None:
                item["response_metadata"] = {TURN_KEY: marker}
            out.append(item)
    return out


_HISTORY_SHAPE = (
    'a JSON list of messages ({"role": "user" or "assistant", "content": "..."}) or the '
    "output of a previous `kbgraph ask --json`"
)


def load_history(text: str, name: str = "--history") -> list[HumanMessage | AIMessage]:
    """The user and assistant messages of a ``--history`` file (see the module docstring)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{name} is not JSON ({exc}); give {_HISTORY_SHAPE}.") from exc
    items = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ConfigError(f"{name} holds no list of messages; give {_HISTORY_SHAPE}.")
    try:
        messages = convert_to_messages(items)
    except (ValueError, TypeError, NotImplementedError) as exc:
        why = " ".join(str(exc).split())[:200]
        raise ConfigError(
            f"{name} has a message that is not one ({why}); give {_HISTORY_SHAPE}."
        ) from exc
    turns = [m for m in messages if isinstance(m, (HumanMessage, AIMessage))]
    if len(turns) < len(messages):
        others = sorted({m.type for m in messages} - {"human", "ai"})
        raise ConfigError(
            f"{name} may hold only user and assistant messages, not {', '.join(others)}."
        )
    return turns


class StderrProgress:
    """``knowledge.index.*`` events as short lines on stderr (stdout stays clean)."""

    def __init__(self) -> None:
        self._stage: tuple[str, str] | None = None

    def __call__(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        if name == "knowledge.index.progress":
            stage = (str(event.get("kb")), str(event.get("stage")))
            if stage != self._stage:
                self._stage = stage
                _err(f"indexing {stage[0]}: {stage[1]} ({event.get('total')})")
        elif name == RECORDED_EVENT:
            _err(f"recorded run {event.get('id')}: {event.get('path')}")
        elif name == "knowledge.index.done" and event.get("indexed"):
            _err(
                f"indexed {event.get('kb')}: {event.get('fileCount')} files, "
                f"{event.get('chunkCount')} chunks ({event.get('embedded')} embedded, "
                f"{event.get('reused')} reused)"
            )


def _err(line: str) -> None:
    click.echo(printable(line), err=True)


def print_human(state: Mapping[str, Any], *, trace: bool) -> None:
    """The answer, its sources and verdicts for a terminal: every line from documents or
    a model goes through :func:`~kbgraph._exit_codes.printable` (their control characters
    shown as escapes, never acting on the terminal)."""
    if trace:
        click.echo("Trace:")
        for line in trace_lines(state):
            click.echo(f"  {printable(line)}")
        click.echo()
    click.echo(printable(str(state.get("answer") or ""), lines=True))
    citations = state.get("rag_citations") or []
    if citations:
        click.echo("\nSources:")
        for line in source_lines(citations):
            click.echo(f"  {printable(line)}")
    click.echo()
    lines = verdict_lines(state) + check_lines(state)
    for line in lines + unresolved_lines(state):
        click.echo(printable(line))


@click.command("ask")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only: the answer and rag_* keys.")
@click.option("--trace", is_flag=True, help="Show the decision of every node.")
@click.option(
    "--embedding",
    default="auto",
    show_default=True,
    envvar="KBGRAPH_EMBEDDING",
    metavar="SPEC",
    help=f"auto (the index's model, else local), {', '.join(spec_forms())} or none (BM25 only).",
)
@click.option(
    "--chat-model",
    default=None,
    envvar="KBGRAPH_CHAT_MODEL",
    metavar="SPEC",
    help="openai:<model>, azure_openai:<deployment>, openai_compatible:<model>@<base_url>, "
    "gguf:<path to a .gguf file>[?threads=1&n_ctx=4096&max_tokens=512] (in process, offline). "
    "Without one the answer is extractive.",
)
@click.option(
    "--llm-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    envvar="KBGRAPH_LLM_TIMEOUT",
    metavar="SECONDS",
    help="Seconds one chat model call may take (env KBGRAPH_LLM_TIMEOUT; default 60). "
    "The answer gets all of it; a node's JSON call at most a quarter with a gguf model. "
    "A timed-out node falls back to its heuristic and the answer is still asked.",
)
@click.option(
    "--top-k",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="How many passages to retrieve (the sources the answer may cite).",
)
@click.option(
    "--history",
    type=click.File("r", encoding="utf-8"),
    default=None,
    metavar="FILE",
    help="Continue a conversation: a JSON list of {role, content} messages, or the --json "
    "output of the previous question ('-' reads stdin).",
)
@click.option(
    "--record",
    is_flag=True,
    help="Record the run for `kbgraph inspect` (in $KBGRAPH_RUNS_DIR, else the cache's runs/).",
)
@index_dir_opt
@failing_as("kbgraph ask")
def ask(
    folder: Path,
    question: str,
    as_json: bool,
    trace: bool,
    embedding: str,
    chat_model: str | None,
    llm_timeout: float | None,
    top_k: int,
    history: TextIO | None,
    record: bool,
    index_dir: Path | None,
) -> None:
    """Answer QUESTION from the documents in FOLDER, with numbered sources."""
    if not question.strip():
        raise ConfigError("the question is empty; pass the question to answer from FOLDER")
    earlier = load_history(history.read()) if history is not None else []
    state = run_ask(
        folder,
        question,
        embedding=embedding,
        chat_model=chat_model,
        top_k=top_k,
        history=earlier,
        on_event=StderrProgress(),
        record=record,
        llm_timeout=llm_timeout,
        index_dir=index_dir,
    )
    if as_json:
        click.echo(json.dumps(json_view(state), ensure_ascii=False, indent=2, default=str))
        if trace:
            for line in trace_lines(state):
                _err(line)
        return
    print_human(state, trace=trace)


__all__ = [
    "ask",
    "json_view",
    "load_history",
    "message_dicts",
    "raise_on_retrieval_failure",
    "run_ask",
]
