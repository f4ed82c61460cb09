"""Settings of the retrieval subgraph: LangGraph 1.x ``context_schema``.

Nodes read them with :func:`settings_from_runtime` (``runtime.context``). Every field is
JSON-serialisable so that LangGraph Studio can show and edit them. A missing context means
defaults; a dict is validated into :class:`RagSettings`, and a key it does not know is a
``ConfigError`` naming the allowed ones (a mistyped key must not be dropped quietly); a
parent agent's own context object (a dataclass or model) gives the fields it shares.

Knowledge bases: when ``knowledge_bases`` is empty the folders named by the environment
variable ``KBGRAPH_FOLDER`` (one path, or several separated by ``os.pathsep``) are used;
without that variable there is no knowledge base, and retrieval reports "add documents"
rather than indexing whatever the current directory happens to be.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired

from langgraph.config import get_config
from pydantic import Field, PrivateAttr, field_validator
from typing_extensions import TypedDict

from kbgraph._base.allow_lists import listed
from kbgraph._base.validation import Settings
from kbgraph.errors import ConfigError
from kbgraph.retrieval import ChunkConfig, SearchConfig

RerankMode = Literal["heuristic", "llm", "none", "cross_encoder"]
AnswerPolicy = Literal["repair", "flag", "regenerate", "extractive", "off"]
FOLDER_ENV = "KBGRAPH_FOLDER"
MAX_REWRITES_LIMIT = 5


class KnowledgeBaseSpec(TypedDict):
    """One knowledge base: a folder (absolute, or relative to the working directory), the
    ``name`` sources are attributed to (default: the folder's name), a ``description``
    SelectScope matches questions against and the ``store`` its index lives in (default:
    the folder index beside it; ``postgresql://...``: PostgreSQL with pgvector; several
    hosts, ``postgresql://user@primary,standby/db``: searches prefer a standby), and
    ``read_store``, a standby's URL that searches go to first (writes go to ``store``), and
    ``index_dir``, where the folder index lives when not in ``<folder>/.kbgraph`` (``kbgraph
    index --index-dir``). Instead of a folder, ``retriever`` names a LangChain VectorStore or
    BaseRetriever by import path (``package.module:attribute``; see
    :mod:`kbgraph.graphs._langchain_kb`)."""

    folder: NotRequired[str]
    retriever: NotRequired[str]
    name: NotRequired[str]
    description: NotRequired[str]
    store: NotRequired[str]
    read_store: NotRequired[str]
    index_dir: NotRequired[str]


@dataclass(frozen=True, slots=True)
class ResolvedKnowledgeBase:
    name: str
    folder: str
    description: str
    store: str | None = field(default=None, repr=False)  # a DSN may hold a password
    retriever: str | None = None  # a LangChain object's import path (no folder then)
    read_store: str | None = field(default=None, repr=False)  # a standby's URL
    index_dir: str | None = None  # absolute; None: the folder's own .kbgraph


class AnswerCheckSettings(Settings):
    """How the ready agents check a generated answer against the sources it cites
    (:func:`kbgraph.evals.check_answer`). ``judge``: ``offline`` (default: no LLM, the
    packaged local model), ``overlap`` (word overlap, no model) or a chat model spec for an
    LLM judge. ``policy``: ``repair`` (default) never shows an answer that loops, was cut
    off, cites no source while sources exist or scores below ``threshold``: it is written
    once more with those reasons, then replaced by the extractive answer saying why (both
    attempts kept in ``answer_check``); ``flag`` records the check and the unsupported claims;
    ``regenerate`` asks the chat model once more, naming the unsupported claims, when any
    claim is unsupported (the better-supported answer is kept); ``extractive`` replaces an
    answer scored below ``threshold`` by the extractive answer (quotes of the sources);
    ``off`` checks nothing."""

    judge: str = Field(default="offline", min_length=1)
    policy: AnswerPolicy = "repair"
    threshold: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    rewrite: bool | None = None
    """Whether ``repair`` writes a rejected answer once more before the extractive answer:
    ``None`` (default) does with a chat model served elsewhere and not with one that runs
    in this process on the CPU (a ``gguf:`` model, see :func:`asks_optional`)."""

    def rewrites_with(self, model: Any) -> bool:
        return asks_optional(self.rewrite, model)


class RagSettings(Settings):
    """The subgraph's context schema (a frozen pydantic model: LangGraph builds it from a
    dict context, and a bad value or an unknown key is a one-line ``ConfigError``).

    ``search`` is the engine's own :class:`~kbgraph.retrieval._config.SearchConfig`: top-k,
    ranker mode (``None``: hybrid; a registered ranker alone: ``bm25``, ``vector``,
    ``title``, ...), candidates per ranker, fusion (RRF with ``rrf_k``, or convex),
    per-ranker ``weights`` and a
    ``score_threshold`` on the subgraph's final 0..1 score. ``chunking`` (``None``: what the
    index was built with) is the engine's :class:`~kbgraph.retrieval._config.ChunkConfig`,
    used when the subgraph indexes a folder. ``chat_model`` is a spec for
    :func:`kbgraph.graphs._models.resolve_chat_model` (``None``: every node uses its
    heuristic path). ``llm_timeout_seconds`` (default 60; ``kbgraph ask --llm-timeout``,
    env ``KBGRAPH_LLM_TIMEOUT``) bounds each chat model call: the answer gets all of it, a
    node's JSON call at most 256 tokens and, with a gguf model, a quarter of it; a timed-out
    node falls back to its heuristic and the answer is still asked. ``rerank_diversity`` (0
    to below 1, default 0 = off) is the heuristic rerank's discount of each further chunk
    of a file already chosen, for a context that spans more files;
    ``rerank_section_weight`` (0 to 1, default 0 = off) is its bonus for query terms in a
    chunk's heading path. The grounding heuristic needs
    ``grounding_min_coverage`` of the question's terms in the context and, when a vector
    ranker ran, a best cosine similarity of ``grounding_min_vector_score`` (``None``
    switches that floor off). ``answer_check`` (:class:`AnswerCheckSettings`) says how the
    ready agents check each generated answer against its sources. ``live`` keeps each
    knowledge base fresh with a file watcher in this process (changes are indexed as they
    happen, and no run walks the folder); without it ``auto_index`` checks the folder at
    most every few seconds. ``record_runs`` writes each finished run (its final state) for
    ``kbgraph inspect``'s Runs view (see :mod:`kbgraph.graphs._recording`).

    ``embedding`` is ``auto`` by default: each index is searched (and updated) with the model
    it was built with, and a new index gets the local model. A spec naming another model
    than an index's is refused with ``ModelMismatchError``, unless
    ``rebuild_on_model_change`` says to rebuild it with that model. ``none`` searches BM25
    only. ``knowledge_bases`` takes a path, a list of paths, a ``{name: path}`` mapping or a
    list of ``{"folder", "name", "description"}`` objects."""

    knowledge_bases: list[KnowledgeBaseSpec] = Field(default_factory=list)
    embedding: str = "auto"
    rebuild_on_model_change: bool = False
    chat_model: str | None = None
    search: SearchConfig = Field(default_factory=SearchConfig)
    chunking: ChunkConfig | None = None
    rerank: RerankMode = "heuristic"
    rerank_diversity: float = Field(default=0.0, ge=0.0, lt=1.0)
    rerank_section_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    context_budget_tokens: int = Field(default=2000, ge=1)
    max_rewrites: int = Field(default=1, ge=0, le=MAX_REWRITES_LIMIT)
    auto_index: bool = True
    live: bool = False
    llm_timeout_seconds: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    llm_rerank_max: int = Field(default=20, ge=1)
    grounding_min_coverage: float = Field(default=0.5, ge=0.0, le=1.0)
    grounding_model: bool | None = None
    """Whether GroundingCheck asks the chat model for its verdict (else the heuristic's
    stands): ``None`` (default) asks a model served elsewhere, not one that runs in this
    process on the CPU (see :func:`asks_optional`)."""
    grounding_min_vector_score: float | None = Field(default=0.2, allow_inf_nan=False)
    answer_check: AnswerCheckSettings = Field(default_factory=AnswerCheckSettings)
    # Write each finished run to kbgraph.graphs._recording.runs_dir() for `kbgraph inspect`.
    record_runs: bool = False
    # Set once a graph's own knowledge base objects are in ``knowledge_bases`` (by
    # rag_search, which may then narrow them): its nodes must not add them again.
    _objects_added: bool = PrivateAttr(default=False)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # A store URL may hold a password, and reprs end up in logs, tracebacks and Studio.
        for name, value in super().__repr_args__():
            if name == "knowledge_bases":
                value = [_without_password(spec) for spec in value]
            yield name, value

    @field_validator("knowledge_bases", mode="before")
    @classmethod
    def _knowledge_base_shapes(cls, value: Any) -> Any:
        return knowledge_base_specs(value)

    def resolved_knowledge_bases(self) -> list[ResolvedKnowledgeBase]:
        """The configured knowledge bases (else those of ``KBGRAPH_FOLDER``), with absolute
        folders and unique names."""
        specs: list[Mapping[str, Any]] = list(self.knowledge_bases)
        if not specs:
            specs = [{"folder": part} for part in listed(FOLDER_ENV, sep=os.pathsep)]
        return resolved_specs(specs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (what Studio shows and a dict context may hold)."""
        return self.model_dump(mode="json")


def resolved_folder(folder: str | os.PathLike[str]) -> str:
    """The absolute folder a knowledge base's ``folder`` names, as the graph opens it:
    stripped, ``~`` expanded, relative to the working directory, links resolved. The one
    normalisation of a folder: the served guard judges what this returns, so that it never
    judges another folder than the graph opens (``" /elsewhere"`` was a name inside the
    working folder to the guard and ``/elsewhere`` to the graph)."""
    return str(Path(os.fspath(folder).strip()).expanduser().resolve())


def resolved_specs(specs: Sequence[Mapping[str, Any]]) -> list[ResolvedKnowledgeBase]:
    """Knowledge base specs (as :func:`knowledge_base_specs` gives them) as the graph opens
    them: absolute folders, stripped retrievers and stores, unique names (a name used twice
    is a ``ConfigError``)."""
    out: list[ResolvedKnowledgeBase] = []
    used: set[str] = set()
    for spec in specs:
        retriever = str(spec.get("retriever") or "").strip() or None
        if retriever is not None:
            folder = ""
            default = retriever.rsplit(":", 1)[-1] or "kb"
        else:
            folder = resolved_folder(str(spec["folder"]))
            default = Path(folder).name or "kb"
        name = str(spec.get("name") or default)
        if name in used:
            raise ConfigError(
                f"two knowledge bases are named {name!r}; give each a distinct 'name'."
            )
        used.add(name)
        store = str(spec.get("store") or "").strip() or None
        read_store = str(spec.get("read_store") or "").strip() or None
        description = str(spec.get("description") or "")
        index_dir = _index_dir(spec, retriever)
        out.append(
            ResolvedKnowledgeBase(
                name, folder, description, store, retriever, read_store, index_dir
            )
        )
    return out


def _index_dir(spec: Mapping[str, Any], retriever: str | None) -> str | None:
    raw = str(spec.get("index_dir") or "").strip()
    if not raw:
        return None
    if retriever is not None:
        raise ConfigError(
            f"knowledge base {spec.get('name') or retriever!r} has both 'retriever' and "
            "'index_dir'; a LangChain store keeps its own index: drop 'index_dir'."
        )
    return resolved_folder(raw)


_SHAPES = (
    'a folder path ("docs/"), a list of paths (["docs/", "api/"]), a mapping of names to '
    'paths ({"docs": "docs/"}) or a list of objects ([{"name": "docs", "folder": "docs/", '
    '"description": "..."}], or {"name": "wiki", "retriever": "package.module:attribute"} for '
    "a LangChain VectorStore or BaseRetriever; in-process objects go to build_rag_graph)"
)


def knowledge_base_specs(value: Any) -> list[dict[str, Any]]:
    """``knowledge_bases`` in any accepted shape (see :data:`_SHAPES`) as a list of
    ``{"folder", "name"?, "description"?}``; a ``ValueError`` naming the shapes otherwise."""
    if isinstance(value, str | os.PathLike):
        value = [value]
    elif isinstance(value, Mapping) and "folder" not in value and "retriever" not in value:
        value = [{"name": str(k), "folder": v} for k, v in value.items()]
    elif isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ValueError(f"knowledge_bases must be {_SHAPES}; got a {type(value).__name__}")
    out: list[dict[str, Any]] = []
    for item in value:
        spec = {"folder": item} if isinstance(item, str | os.PathLike) else item
        if isinstance(spec, Mapping) and "retriever" in spec:
            out.append(_retriever_spec(spec))
            continue
        folder = spec.get("folder") if isinstance(spec, Mapping) else None
        if not isinstance(folder, str | os.PathLike) or not str(folder).strip():
            raise ValueError(f"knowledge base {item!r} is not a folder; use {_SHAPES}")
        out.append({**spec, "folder": os.fspath(folder)})
    return out


_URL_PASSWORD = re.compile(r"(://[^/@:]*):[^/@]*@")
_KEY_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def _without_password(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec`` with the password of its ``store`` and ``read_store`` URLs (``user:pw@`` or
    ``password=pw``) masked, for reprs."""
    masked = dict(spec)
    for key in ("store", "read_store"):
        url = spec.get(key)
        if isinstance(url, str):
            masked[key] = masked_url(url)
    return masked


def masked_url(url: str) -> str:
    """A store URL with its password (``user:pw@`` or ``password=pw``) masked."""
    return _KEY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1:***@", url))


def with_knowledge_bases(settings: RagSettings, specs: list[dict[str, Any]]) -> RagSettings:
    """``settings`` with ``specs`` added to the knowledge bases it searches (those it
    configures, else those of ``KBGRAPH_FOLDER``); a name used twice is a ``ConfigError``."""
    if not specs or settings._objects_added:
        return settings
    base = [spec_of(kb) for kb in settings.resolved_knowledge_bases()]
    merged = settings.model_copy(update={"knowledge_bases": [*base, *specs]})
    merged.resolved_knowledge_bases()  # names must stay distinct
    merged._objects_added = True
    return merged


def spec_of(kb: ResolvedKnowledgeBase) -> dict[str, Any]:
    """A resolved knowledge base as a spec again (its store and retriever kept)."""
    spec: dict[str, Any] = {"name": kb.name, "description": kb.description}
    if kb.retriever is not None:
        spec["retriever"] = kb.retriever
    else:
        spec["folder"] = kb.folder
    if kb.store is not None:
        spec["store"] = kb.store
    if kb.read_store is not None:
        spec["read_store"] = kb.read_store
    if kb.index_dir is not None:
        spec["index_dir"] = kb.index_dir
    return spec


def _retriever_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    retriever = spec.get("retriever")
    if not isinstance(retriever, str) or ":" not in retriever or "folder" in spec:
        raise ValueError(
            f"knowledge base {dict(spec)!r}: 'retriever' must be an import path "
            "'package.module:attribute' naming a LangChain VectorStore or BaseRetriever, "
            "without a 'folder'"
        )
    return dict(spec)


def settings_from_context(context: Any) -> RagSettings:
    """``None`` → defaults; a ``RagSettings`` → itself; a mapping → validated whole (an
    unknown key is a ``ConfigError``); any other object (a parent agent's own context
    dataclass or model) → the fields it shares with ``RagSettings``."""
    if context is None:
        return RagSettings()
    if isinstance(context, RagSettings):
        return context
    fields = RagSettings.model_fields
    if isinstance(context, Mapping):
        values = dict(context)
    else:
        values = {k: getattr(context, k) for k in fields if hasattr(context, k)}
    return RagSettings(**values)


def asks_optional(choice: bool | None, model: Any) -> bool:
    """An optional model call's setting (``grounding_model``, ``answer_check.rewrite``):
    ``True``/``False`` as given; ``None`` asks unless the model runs in this process
    (``runs_in_process``: a ``gguf:`` model). Measured with the packaged SmolLM2 on a busy
    2-core machine (bench_agentic, 12 questions): GroundingCheck's call took ~10 CPU-s and
    timed out in most runs (its heuristic verdict stood anyway), and the second answer
    took ~15 CPU-s and was never the one shown; the person waits for both."""
    if choice is not None:
        return choice
    return not getattr(model, "runs_in_process", False)


def settings_from_runtime(runtime: Any) -> RagSettings:
    """The settings of a run: ``runtime`` is a LangGraph ``Runtime`` (its ``context`` may be
    ``None``, a dict or a dataclass), or ``None``; a context passed directly also works.
    Without a context, the settings named in the run's ``config["configurable"]`` are used,
    as the LangGraph server does (it copies ``configurable`` into a missing context): in
    process they were ignored without a word, and the run searched nothing."""
    if isinstance(runtime, (Mapping, RagSettings)):
        return settings_from_context(runtime)
    context = getattr(runtime, "context", None)
    return settings_from_context(configurable_settings() if context is None else context)


def configurable_settings() -> dict[str, Any] | None:
    """The ``RagSettings`` keys of the current run's ``config["configurable"]`` (other keys,
    such as ``thread_id``, are not settings), or ``None`` outside a run or without any."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a LangGraph run
        return None
    named = {k: v for k, v in configurable.items() if k in RagSettings.model_fields}
    return named or None


__all__ = [
    "FOLDER_ENV",
    "MAX_REWRITES_LIMIT",
    "AnswerCheckSettings",
    "AnswerPolicy",
    "KnowledgeBaseSpec",
    "RagSettings",
    "RerankMode",
    "ResolvedKnowledgeBase",
    "configurable_settings",
    "knowledge_base_specs",
    "masked_url",
    "resolved_folder",
    "resolved_specs",
    "settings_from_context",
    "settings_from_runtime",
    "spec_of",
    "with_knowledge_bases",
]
