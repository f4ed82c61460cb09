"""Fakes for the retrieval subgraph's unit tests: a searcher that follows
``kbgraph.graphs._searcher.Searcher`` over files written to a real temporary folder (so that
SelectScope's listing and the citations' line numbers are real), and small builders."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from kbgraph._base.text import stems, words
from kbgraph.graphs._nodes import NodeDeps
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import Candidate, RagState
from kbgraph.retrieval._config import SearchConfig
from kbgraph.retrieval._filters import SearchFilters
from kbgraph.retrieval._progress import ProgressCallback, ProgressEvent
from kbgraph.retrieval._ranking import convex_fuse
from kbgraph.retrieval._records import Chunk, SearchResult, chunk_id
from kbgraph.retrieval._scan import file_kind

DOCS: dict[str, str] = {
    "docs/configuration.md": (
        "# Configuration\n\n## Retry policy\n\nHarbor retries failed provider calls.\n"
        "Set max_attempts and backoff_ms in harbor.yaml to configure the retry policy.\n"
        "The default policy makes 4 attempts with exponential backoff.\n\n"
        "## Timeouts\n\nEvery provider call times out after 10 seconds.\n"
        "Raise timeout_ms to wait longer.\n"
    ),
    "docs/authentication.md": (
        "# Authentication\n\nClients authenticate with API keys.\n"
        "Rotate a key without downtime: create the new key, deploy it, revoke the old one.\n"
    ),
    "src/harbor/retry.py": (
        "class RetryPolicy:\n    max_attempts = 4\n    backoff_ms = 200\n\n"
        "def call_with_retry(call, policy):\n    for attempt in range(policy.max_attempts):\n"
        "        return call()\n"
    ),
    "notes/café.md": (
        "# Café notes\n\nLe café ouvre à 8 h.\nNaïve résumé of the menu: crème brûlée.\n"
    ),
    "notes/windows.txt": "Line one of a Windows file\r\nLine two mentions deployment\r\n",
}


@dataclass
class FakeReport:
    files: int

    def to_dict(self) -> dict[str, Any]:
        return {"fileCount": self.files, "embedded": self.files, "reused": 0}


def chunk_file(source: str, raw: bytes, lines_per_chunk: int) -> list[Chunk]:
    """Chunks of ``lines_per_chunk`` lines with exact byte spans and normalised text."""
    lines = raw.splitlines(keepends=True)
    chunks = []
    for start in range(0, len(lines), lines_per_chunk):
        part = lines[start : start + lines_per_chunk]
        data = b"".join(part).rstrip(b"\r\n")
        text = data.decode("utf-8").replace("\r\n", "\n")
        begin = sum(len(x) for x in lines[:start])
        chunks.append(
            Chunk(
                chunk_id(source, begin, begin + len(data), text), text, source, start + 1,
                start + len(part), begin, begin + len(data),
                section=None,
            )
        )  # fmt: skip
    return chunks


def _bag(text: str) -> Counter[str]:
    return Counter(stems([w for w in words(text) if len(w) > 1]))


def cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(a[t] * b[t] for t in a)
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


RANKERS = ("vector", "bm25")


@dataclass
class FakeSearcher:
    """``vector``: cosine of stem bags (returns ``limit`` chunks even at 0, as vector search
    does); ``bm25``: count of shared stems (only chunks sharing one)."""

    chunks: list[Chunk]
    fail_rank: Exception | None = None
    fail_open: Exception | None = None
    fresh: bool = False
    rank_calls: list[tuple[str, str, int, SearchFilters | None]] = field(default_factory=list)
    search_calls: list[tuple[str, SearchConfig]] = field(default_factory=list)
    index_calls: int = 0
    closed: bool = False
    threads: list[str] = field(default_factory=list)

    def ensure_fresh(
        self, *, progress: ProgressCallback | None = None, allow_model_change: bool = False
    ) -> FakeReport | None:
        if self.fail_open is not None:
            raise self.fail_open
        self.index_calls += 1
        if self.fresh:
            return None
        if progress is not None:
            progress(ProgressEvent("scan", 1, 1, "scanned"))
            progress(ProgressEvent("embed", len(self.chunks), len(self.chunks), "embedding"))
        self.fresh = True
        return FakeReport(len({c.source for c in self.chunks}))

    def rank(
        self, query: str, ranker: str, *, limit: int, filters: SearchFilters | None = None
    ) -> list[SearchResult]:
        self.rank_calls.append((query, ranker, limit, filters))
        self.threads.append(threading.current_thread().name)
        if self.fail_rank is not None:
            raise self.fail_rank
        allowed = [
            c
            for c in self.chunks
            if filters is None or filters.allows(c.source, file_kind(c.source))
        ]
        q = _bag(query)
        scored = []
        for c in allowed:
            bag = _bag(c.text)
            score = cosine(q, bag) if ranker == "vector" else float(sum((q & bag).values()))
            if ranker == "vector" or score > 0:
                scored.append((score, c))
        scored.sort(key=lambda sc: (-sc[0], sc[1].source, sc[1].line_start))
        return [
            SearchResult(c, s, ranks={ranker: r}, scores={ranker: s})
            for r, (s, c) in enumerate(scored[:limit], 1)
        ]

    def search(
        self,
        query: str,
        *,
        config: SearchConfig | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchResult]:
        """Convex fusion of the two rankers above, every candidate scored by both."""
        config = config or SearchConfig()
        self.search_calls.append((query, config))
        limit = config.candidates()
        lists = {r: self.rank(query, r, limit=len(self.chunks), filters=filters) for r in RANKERS}
        exact = {r: {res.chunk.id: res.score for res in found} for r, found in lists.items()}
        ranks = {
            r: {res.chunk.id: k for k, res in enumerate(found[:limit], 1)}
            for r, found in lists.items()
        }
        pool = list(dict.fromkeys(i for by_id in ranks.values() for i in by_id))
        chunks = {res.chunk.id: res.chunk for found in lists.values() for res in found}
        arrays = {r: np.array([exact[r].get(i, 0.0) for i in pool]) for r in RANKERS}
        fused = convex_fuse(arrays, config.weights)
        order = sorted(range(len(pool)), key=lambda j: (-fused[j], j))[: config.top_k]
        out = []
        for j in order:
            got = {r: ranks[r][pool[j]] for r in RANKERS if pool[j] in ranks[r]}
            scores = {r: float(arrays[r][j]) for r in RANKERS}
            out.append(SearchResult(chunks[pool[j]], float(fused[j]), got, scores))
        return out

    def close(self) -> None:
        self.closed = True


def write_docs(folder: Path, docs: Mapping[str, str] = DOCS) -> dict[str, bytes]:
    raw = {}
    for rel, text in docs.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        raw[rel] = data
    return raw


def fake_kb(folder: Path, docs: Mapping[str, str] = DOCS, lines_per_chunk: int = 3) -> FakeSearcher:
    raw = write_docs(folder, docs)
    return FakeSearcher(
        [c for rel, data in raw.items() for c in chunk_file(rel, data, lines_per_chunk)]
    )


def registry_with(
    searchers: Mapping[Path, FakeSearcher], embedding: str = "fake"
) -> SearcherRegistry:
    registry = SearcherRegistry(factory=_no_factory)
    for folder, searcher in searchers.items():
        registry.register(folder, embedding, searcher)
    return registry


def _no_factory(folder: str, embedding: str | None) -> Any:
    raise AssertionError(f"unexpected real knowledge base for {folder} ({embedding})")


def settings_for(
    *folders: Path, search: dict[str, Any] | None = None, **overrides: Any
) -> RagSettings:
    """Settings over ``folders`` with the fake embedding; ``search`` holds SearchConfig
    fields."""
    kbs = [{"name": f.name, "folder": str(f)} for f in folders]
    values: dict[str, Any] = {"embedding": "fake", **overrides}
    return RagSettings(
        knowledge_bases=kbs,  # type: ignore[arg-type]
        search=SearchConfig(**(search or {})),
        **values,
    )


def runtime_for(
    settings: RagSettings | None, events: list[Any] | None = None
) -> Runtime[RagSettings]:
    sink = events if events is not None else []
    return Runtime(context=settings, stream_writer=sink.append)  # type: ignore[arg-type]


def deps_for(
    registry: SearcherRegistry | None = None, model: Any = None, reranker: Any = None
) -> NodeDeps:
    return NodeDeps(
        chat_model=model, registry=registry or SearcherRegistry(_no_factory), reranker=reranker
    )


def state_of(*turns: str, **keys: Any) -> RagState:
    """Messages alternating human / AI, starting with human."""
    messages = [
        HumanMessage(content=t, id=f"m{i}") if i % 2 == 0 else AIMessage(content=t, id=f"m{i}")
        for i, t in enumerate(turns)
    ]
    return {"messages": messages, **keys}  # type: ignore[typeddict-item]


def candidate(
    cid: str,
    source: str = "docs/a.md",
    lines: tuple[int, int] = (1, 3),
    text: str = "alpha\nbeta\ngamma",
    score: float = 0.5,
    *,
    kb: str = "kb",
    byte_span: tuple[int, int] | None = None,
    section: str | None = None,
    page: int | None = None,
    scores: dict[str, float] | None = None,
) -> Candidate:
    c: Candidate = {
        "chunk_id": cid, "kb": kb, "source": source, "line_start": lines[0], "line_end": lines[1],
        "text": text, "section": section, "page": page, "score": score,
        "ranks": {"q0:bm25": 1}, "scores": dict(scores or {}),
    }  # fmt: skip
    if byte_span is not None:
        c["byte_start"], c["byte_end"] = byte_span
    return c


def ask(text: str, **keys: Any) -> Any:
    """A subgraph input with one human message (typed ``Any`` for the graph's overloads)."""
    return {"messages": [HumanMessage(content=text)], **keys}


def debug_of(update: Mapping[str, Any]) -> Any:
    """The ``rag_retrieval_debug`` a node update leaves in an empty state."""
    from kbgraph.graphs._state import reduce_debug

    return reduce_debug(None, update["rag_retrieval_debug"])
