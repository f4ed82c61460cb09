"""The typed input and output of every tool: MCP clients read these JSON schemas
(``inputSchema``, ``outputSchema``) and each result's ``structuredContent`` follows its
output schema. Snake case throughout, so that a search result's ``source``, ``line_start``
and ``line_end`` can be passed back to ``read`` as they are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kbgraph._base.languages import CodeLanguage, TestRole
from kbgraph.retrieval import SearchMode
from kbgraph.retrieval._internal import MAX_FILTER_PATHS, FileKind, check_search_mode

from ._settings import MAX_QUERY_CHARS, MAX_READ_LINES, MAX_TOP_K

KB_FIELD = Field(
    default=None,
    description="The knowledge base to use (list_knowledge_bases names them); "
    "default: every one (search, stats) or the one holding the file (read).",
)


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchArgs(Arguments):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to look for: words, a phrase or a question.",
    )
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="How many results.")
    mode: SearchMode | None = Field(
        default=None,
        description="Rankers: hybrid (the registered rankers fused; the default when the "
        "index has vectors), or one ranker alone: vector, bm25 (words only), title ... "
        "(the choices are the ranker registry's).",
    )
    paths: list[str] = Field(
        default_factory=list,
        max_length=MAX_FILTER_PATHS,  # as many as a SearchFilters may hold
        description="Only files matching any of these globs (docs/**/*.md) or folder "
        "prefixes (src/api).",
    )
    kinds: list[FileKind | TestRole] = Field(
        default_factory=list,
        max_length=20,
        description="Only files of these kinds (markdown, code, pdf ...) or test roles "
        "(test, non-test); any may match.",
    )
    languages: list[CodeLanguage] = Field(
        default_factory=list,
        max_length=20,
        description="Only code in these languages (python, typescript ...); with kinds, a "
        "file matching any of the kinds or languages is searched.",
    )
    kb: str | None = KB_FIELD

    @field_validator("mode")
    @classmethod
    def _registered_mode(cls, mode: str | None) -> str | None:
        return check_search_mode(mode)


class ReadArgs(Arguments):
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="A file's path relative to its knowledge base folder, as search "
        "results give it in 'source'.",
    )
    line_start: int = Field(default=1, ge=1, description="First line (1-based).")
    line_end: int | None = Field(
        default=None,
        ge=1,
        description=f"Last line, included (default: {MAX_READ_LINES - 1} lines further).",
    )
    kb: str | None = KB_FIELD


class AskArgs(Arguments):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="Sources to retrieve.")
    kb: str | None = KB_FIELD


class KbArgs(Arguments):
    kb: str | None = KB_FIELD


class NoArgs(Arguments):
    pass


class Freshness(BaseModel):
    kb: str
    stale_files: int | None = Field(
        description="Files new, changed or deleted since the index was built (null: no "
        "index, or it was built with other settings)."
    )
    live: bool = Field(description="A file watcher keeps this index up to date.")
    note: str | None = Field(default=None, description="What a stale index means here.")


class SearchHit(BaseModel):
    kb: str
    source: str = Field(description="The file, relative to its knowledge base folder.")
    line_start: int
    line_end: int
    page: int | None = None
    section: str | None = Field(default=None, description="Heading path or code symbol.")
    symbol: str | None = Field(default=None, description="The code symbol (code only).")
    score: float
    citation: str = Field(
        description="source:line_start-line_end (kb:source:... when several knowledge "
        "bases are served), for the answer."
    )
    text: str


class SearchOutput(BaseModel):
    results: list[SearchHit]
    freshness: list[Freshness]
    note: str | None = Field(default=None, description="Said when an index is stale.")


class ReadOutput(BaseModel):
    """Where the lines come from. The lines themselves are the reply's second content
    block: up to 100,000 characters, sent once rather than again inside this object."""

    kb: str
    path: str
    kind: str
    line_start: int
    line_end: int
    total_lines: int
    page: int | None = None
    citation: str
    chars: int = Field(
        description="Characters of the lines, sent once as the reply's second content "
        "block (text) and not repeated here."
    )
    more: bool = Field(description="Lines follow line_end: read again from line_end + 1.")
    note: str | None = Field(
        default=None,
        description="Why fewer lines came back than asked for (the character limit of one "
        "read) and how to read the rest.",
    )


class KnowledgeBaseInfo(BaseModel):
    name: str
    folder: str
    store: Literal["folder", "postgresql"]
    indexed: bool


class KnowledgeBasesOutput(BaseModel):
    knowledge_bases: list[KnowledgeBaseInfo]
    read_only: bool = Field(description="False when the index tool is served.")


Truncated = Annotated[
    int,
    Field(
        description="Chunks longer than the model's input: only their beginning is in the "
        "vector (keyword search reads all of them; a smaller chunk size avoids it).",
    ),
]
"""What ``stats`` and ``index`` say of the index's cut chunks (``IndexStats.truncated``)."""


class KbStats(BaseModel):
    kb: str
    file_count: int
    chunk_count: int
    index_size: int
    last_indexed: str | None
    embedding: dict[str, Any] = Field(description="The model the index was built with.")
    truncated: Truncated = 0
    freshness: Freshness


class StatsOutput(BaseModel):
    stats: list[KbStats]


class AskCitation(BaseModel):
    n: int
    kb: str | None = None
    source: str
    line_start: int | None
    line_end: int | None
    score: float | None = None
    citation: str


class AskOutput(BaseModel):
    answer: str
    answer_mode: str | None = Field(
        default=None, description="How the answer was made (a chat model, extractive ...)."
    )
    citations: list[AskCitation]
    grounded: bool | None = Field(default=None, description="The retrieval's grounding verdict.")
    answer_check: dict[str, Any] | None = Field(
        default=None, description="The answer checked against its sources (score, claims)."
    )
    freshness: list[Freshness]


class IndexedKb(BaseModel):
    kb: str
    file_count: int
    chunk_count: int
    embedded: int
    reused: int
    skipped: int
    truncated: Truncated = 0


class IndexOutput(BaseModel):
    indexed: list[IndexedKb]


@dataclass(frozen=True, slots=True)
class Reply:
    """A tool's structured output and a body of text sent beside it, once: a file's
    lines are not escaped into the JSON of ``output`` a second time (a 100,000-character
    read would go out twice, and a model would read it with every quote escaped)."""

    output: BaseModel
    body: str


__all__ = [
    "AskArgs",
    "AskOutput",
    "Freshness",
    "IndexOutput",
    "KbArgs",
    "KbStats",
    "KnowledgeBasesOutput",
    "NoArgs",
    "ReadArgs",
    "ReadOutput",
    "Reply",
    "SearchArgs",
    "SearchHit",
    "SearchOutput",
    "StatsOutput",
]
