"""LangChain VectorStores and BaseRetrievers as knowledge bases of the subgraph and the tool,
next to a real folder index: fused, numbered and cited like the folder's chunks, with
"lines unknown" where the store's metadata has no line numbers. langchain-core's own
``InMemoryVectorStore`` (with kbgraph's fake embeddings) and a small ``BaseRetriever``."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from kbgraph.errors import ConfigError
from kbgraph.graphs import build_rag_graph
from kbgraph.graphs._langchain_kb import document_chunk, resolve_source
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._tool import make_rag_search, tool_runtime
from kbgraph.testing import FakeEmbeddings

STORE_DOCS = [
    Document(
        "The proxy is configured with the HTTPS_PROXY variable.",
        metadata={"source": "wiki/proxy.md", "line_start": 3, "line_end": 4},
    ),
    Document("Timeouts default to five seconds for every request.", metadata={"source": "faq"}),
    Document("Größe: the cache size is set in megabytes.", metadata={"file_path": "notes/ü.txt"}),
]


class KeywordRetriever(BaseRetriever):
    """Returns the documents sharing a word with the query, in their order."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.lower().split())
        return [d for d in self.docs if words & set(d.page_content.lower().split())]


@pytest.fixture
def store() -> InMemoryVectorStore:
    vs = InMemoryVectorStore(FakeEmbeddings())
    vs.add_documents(STORE_DOCS)
    return vs


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "retry.md").write_bytes(
        b"# Retry\r\n\r\nRequests are retried with exponential backoff.\r\n"
    )
    return root


def _run(graph: Any, question: str, context: Any) -> dict[str, Any]:
    return dict(graph.invoke({"messages": [HumanMessage(question)]}, context=context))


def test_a_vector_store_and_a_folder_are_searched_and_cited_together(
    store: InMemoryVectorStore, folder: Path
) -> None:
    graph = build_rag_graph(knowledge_bases={"wiki": store})
    context = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(folder)}],
                          embedding="fake")  # fmt: skip
    out = _run(graph, "how is the proxy configured and are requests retried?", context)
    kbs = {c["kb"] for c in out["rag_citations"]}
    assert kbs == {"wiki", "docs"}
    proxy = next(c for c in out["rag_citations"] if c["source"] == "wiki/proxy.md")
    assert (proxy["line_start"], proxy["line_end"]) == (3, 4)
    assert "wiki/proxy.md, lines 3-4" in out["rag_context"]
    assert "retry.md, lines 1-3" in out["rag_context"], out["rag_context"]


def test_a_chunk_without_line_numbers_is_cited_as_lines_unknown(
    store: InMemoryVectorStore,
) -> None:
    out = _run(
        build_rag_graph(knowledge_bases={"wiki": store}),
        "what is the default timeout of a request?",
        {"knowledge_bases": [], "embedding": "fake"},
    )
    faq = next(c for c in out["rag_citations"] if c["source"] == "faq")
    assert (faq["line_start"], faq["line_end"]) == (None, None)
    assert "Source: faq, lines unknown" in out["rag_context"]


def test_document_metadata_becomes_the_chunk() -> None:
    chunk = document_chunk(STORE_DOCS[2], "wiki")
    assert chunk.source == "notes/ü.txt" and chunk.line_start == chunk.line_end == 0
    same_text = Document(STORE_DOCS[2].page_content, metadata={"path": "notes/ü.txt"})
    assert chunk.id == document_chunk(same_text, "x").id  # a stable id from source and text
    with_id = document_chunk(
        Document("x", id="doc-7", metadata={"start_line": 2, "end_line": 5}), "k"
    )
    assert (with_id.id, with_id.source, with_id.line_start, with_id.line_end) == (
        "doc-7",
        "k",
        2,
        5,
    )


def test_a_base_retriever_is_a_knowledge_base() -> None:
    retriever = KeywordRetriever(docs=STORE_DOCS)
    out = _run(
        build_rag_graph(knowledge_bases={"kw": retriever}),
        "proxy variable",
        {"embedding": "fake"},
    )
    assert [c["source"] for c in out["rag_citations"]][:1] == ["wiki/proxy.md"]
    assert all(c["kb"] == "kw" for c in out["rag_citations"])
    lists = out["rag_retrieval_debug"]["steps"]
    assert any("kw" in str(step) for step in lists)


@pytest.mark.parametrize("wrong", [42, "docs/", FakeEmbeddings(), {"folder": "docs"}])
def test_a_wrong_object_is_a_config_error_when_the_graph_is_built(wrong: object) -> None:
    with pytest.raises(ConfigError, match="VectorStore or BaseRetriever"):
        build_rag_graph(knowledge_bases={"bad": wrong})


def test_an_import_path_in_a_json_context_names_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "kbg_test_store_mod.py"
    module.write_text(
        textwrap.dedent(
            """
            from langchain_core.documents import Document
            from langchain_core.vectorstores import InMemoryVectorStore
            from kbgraph.testing import FakeEmbeddings

            def make():
                vs = InMemoryVectorStore(FakeEmbeddings())
                vs.add_documents([Document("Zeppelins fly at low altitude.",
                                           metadata={"source": "air.md"})])
                return vs
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    context = {"knowledge_bases": [{"name": "air", "retriever": "kbg_test_store_mod:make"}],
               "embedding": "fake"}  # fmt: skip
    out = _run(build_rag_graph(), "how high do zeppelins fly?", context)
    assert [c["source"] for c in out["rag_citations"]] == ["air.md"]
    registry = SearcherRegistry()
    once = resolve_source("kbg_test_store_mod:make", {}, registry)
    assert resolve_source("kbg_test_store_mod:make", {}, registry) is once  # made once


def test_the_graphs_objects_live_in_its_dependencies_and_go_with_it(folder: Path) -> None:
    import gc
    import weakref

    import kbgraph.graphs._langchain_kb as module

    store = InMemoryVectorStore(FakeEmbeddings())
    store.add_documents(STORE_DOCS)
    graph = build_rag_graph(knowledge_bases={"wiki": store})
    context = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(folder)}],
                          embedding="fake")  # fmt: skip
    assert {c["kb"] for c in _run(graph, "proxy?", context)["rag_candidates"]} >= {"wiki"}
    assert graph.config["metadata"]["kbgraph_knowledge_bases"] == ["wiki"]  # names only
    assert not [v for v in vars(module).values() if isinstance(v, dict) and store in v.values()]
    released = weakref.ref(store)
    del graph, store
    gc.collect()
    assert released() is None


def test_an_object_of_another_graph_is_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigError, match="belongs to another graph"):
        resolve_source("object:wiki", {}, SearcherRegistry())


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"retriever": "no_colon_here"}, "import path"),
        ({"retriever": "pkg:attr", "folder": "docs/"}, "without a 'folder'"),
    ],
)
def test_a_malformed_retriever_spec_is_refused(spec: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RagSettings(knowledge_bases=[spec])


def test_an_import_path_that_does_not_import_is_reported_by_the_run() -> None:
    out = _run(
        build_rag_graph(),
        "anything at all?",
        {"knowledge_bases": [{"name": "gone", "retriever": "no_such_module_kbg:store"}]},
    )
    errors = str(out["rag_retrieval_debug"])
    assert "cannot be imported" in errors and "no_such_module_kbg" in errors


def _retrieve_errors(out: dict[str, Any]) -> dict[str, Any]:
    steps = out["rag_retrieval_debug"]["steps"]
    return next(step["data"]["errors"] for step in steps if step["node"] == "retrieve")


FAILING_MODULES = {
    # the import path a context names -> its module's source
    "kbg_bad_import:x": "raise RuntimeError('the store module broke\\n  on import (kbg)')\n",
    "kbg_bad_factory:make": "def make():\n    raise RuntimeError('the factory broke\\n  (kbg)')\n",
}


@pytest.mark.parametrize("ref", sorted(FAILING_MODULES))
def test_a_store_module_or_factory_that_raises_is_recorded_and_the_turn_goes_on(
    ref: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: Path
) -> None:
    """Issue 42 hole 10: a retriever whose module raises on import, or whose factory
    raises, crashed the turn (only KbgraphError was caught around resolving it), while
    every other failure of a searcher is recorded as that knowledge base's error."""
    source = FAILING_MODULES[ref]
    (tmp_path / f"{ref.split(':')[0]}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    context = {"knowledge_bases": [{"name": "bad", "retriever": ref},
                                   {"name": "docs", "folder": str(folder)}],
               "embedding": "fake"}  # fmt: skip
    out = _run(build_rag_graph(), "are requests retried?", context)
    [record] = _retrieve_errors(out)["bad"]
    assert record["type"] == "ConfigError" and ref in record["message"]
    assert "RuntimeError: the" in record["message"] and "(kbg)" in record["message"]
    assert "\n" not in record["message"] and "fix the" in record["message"]
    assert {c["kb"] for c in out["rag_citations"]} == {"docs"}  # the other base answered
    with pytest.raises(ConfigError, match="RuntimeError"):
        resolve_source(ref, {}, SearcherRegistry())


def test_any_failure_resolving_a_store_is_recorded_as_a_folders_open_failure_is(
    monkeypatch: pytest.MonkeyPatch, folder: Path
) -> None:
    """Not only the import path's errors: whatever resolving a store raises (a registry of
    one's own, a store's constructor) is this knowledge base's error, not the turn's."""
    import kbgraph.graphs._nodes.retrieve as retrieve

    def broken(*_: object) -> None:
        raise LookupError("no store here (kbg)")

    monkeypatch.setattr(retrieve, "resolve_source", broken)
    context = {"knowledge_bases": [{"name": "bad", "retriever": "kbg_any:store"},
                                   {"name": "docs", "folder": str(folder)}],
               "embedding": "fake"}  # fmt: skip
    out = _run(build_rag_graph(), "are requests retried?", context)
    assert _retrieve_errors(out)["bad"] == [
        {"where": "", "type": "LookupError", "message": "no store here (kbg)"}
    ]
    assert {c["kb"] for c in out["rag_citations"]} == {"docs"}


def test_rag_search_searches_the_graphs_objects_and_narrows_to_them(
    store: InMemoryVectorStore, folder: Path
) -> None:
    tool = make_rag_search(build_rag_graph(knowledge_bases={"wiki": store}))
    runtime = tool_runtime(
        RagSettings(knowledge_bases=[{"name": "docs", "folder": str(folder)}], embedding="fake")
    )
    message = tool.invoke(
        {"type": "tool_call", "id": "c1", "name": tool.name,
         "args": {"query": "proxy variable", "runtime": runtime, "knowledge_bases": ["wiki"]}}
    )  # fmt: skip
    assert message.status == "success"
    assert {c["kb"] for c in message.artifact["citations"]} == {"wiki"}
    alone = tool.invoke(
        {"type": "tool_call", "id": "c2", "name": tool.name,
         "args": {"query": "proxy variable", "runtime": tool_runtime({"embedding": "fake"})}}
    )  # fmt: skip
    assert alone.status == "success" and "wiki/proxy.md" in alone.content


def test_the_async_path_searches_the_store(store: InMemoryVectorStore) -> None:
    graph = build_rag_graph(knowledge_bases={"wiki": store})
    out = asyncio.run(
        graph.ainvoke(
            {"messages": [HumanMessage("how is the proxy configured?")]},
            context={"embedding": "fake"},
        )
    )
    assert any(c["source"] == "wiki/proxy.md" for c in out["rag_citations"])


def test_a_name_used_by_a_folder_and_an_object_is_refused(
    store: InMemoryVectorStore, folder: Path
) -> None:
    graph = build_rag_graph(knowledge_bases={"docs": store})
    with pytest.raises(ConfigError, match="two knowledge bases are named 'docs'"):
        _run(graph, "proxy?", {"knowledge_bases": {"docs": str(folder)}, "embedding": "fake"})


def test_the_chat_agent_answers_from_a_store(store: InMemoryVectorStore) -> None:
    from kbgraph.agents._chat import build_chat_agent
    from kbgraph.testing import ScriptedChatModel

    model = ScriptedChatModel(default="Set HTTPS_PROXY [1].")
    agent = build_chat_agent(
        chat_model=model, rag_graph=build_rag_graph(knowledge_bases={"wiki": store})
    )
    out = agent.invoke(
        {"messages": [HumanMessage("how is the proxy configured?")]},
        context={"embedding": "fake"},
    )
    assert out["answer_citations"][0]["source"] == "wiki/proxy.md"
    assert "wiki/proxy.md, lines 3-4" in "\n".join(m.text for m in model.calls[-1].messages)


def _faq_answer(store: InMemoryVectorStore, **context: Any) -> dict[str, Any]:
    out = _run(
        build_rag_graph(knowledge_bases={"wiki": store}),
        "what is the default timeout of a request?",
        {"embedding": "fake", **context},
    )
    return out


def test_unknown_lines_are_none_in_resolved_citations_and_count_as_the_file_in_evals(
    store: InMemoryVectorStore,
) -> None:
    """Unknown lines are ``None`` wherever a citation goes (was 0: the resolved citation
    said lines 0-0, and source recall compared a gold line range with line 0, so a store
    passage from the gold file was never recalled)."""
    from kbgraph._base.citations import extract_citations
    from kbgraph.evals._evaluators.sources import is_recalled
    from kbgraph.evals._records import GoldSource, Passage

    out = _faq_answer(store)
    faq = next(c for c in out["rag_citations"] if c["source"] == "faq")
    report = extract_citations(f"Five seconds [{faq['n']}].", out["rag_citations"])
    [cited] = report.citations
    assert (cited["source"], cited["line_start"], cited["line_end"]) == ("faq", None, None)
    assert all(u["line_start"] is None or u["line_start"] >= 1 for u in report.uncited)
    passage = Passage.from_any(faq, faq["n"])
    assert passage.line_start is None and passage.label.endswith(" faq")  # no ":0-0"
    assert is_recalled(GoldSource(path="faq", line_start=3, line_end=4), [passage])


def test_a_long_chunk_of_unknown_lines_is_cut_to_the_budget_not_dropped() -> None:
    """A store's chunk larger than the budget keeps its first lines, still "lines
    unknown" (was dropped: line 0..0 did not match its text's line count)."""
    text = "\n".join(f"timeout rule {i}: requests wait five seconds" for i in range(60))
    vs = InMemoryVectorStore(FakeEmbeddings())
    vs.add_documents([Document(text, metadata={"source": "faq"})])
    out = _faq_answer(vs, context_budget_tokens=120)
    [faq] = out["rag_citations"]
    assert faq["line_start"] is None and 0 < faq["text"].count("\n") < 59
    assert "Source: faq, lines unknown" in out["rag_context"]


OFF_TOPIC = [
    Document(
        f"Release {n} notes: icons, fonts and colours were updated.", metadata={"source": f"r{n}"}
    )
    for n in range(1, 4)
]


def test_a_store_without_relevance_scores_is_scored_by_similarity_not_by_order(
    folder: Path,
) -> None:
    # InMemoryVectorStore has no relevance scores (NotImplementedError): its first document
    # used to be scored 1.0 by rank and to win the fusion over the folder's right file, and
    # the grounding check read that 1.0 as a cosine similarity.
    store = InMemoryVectorStore(FakeEmbeddings())
    store.add_documents(OFF_TOPIC)
    graph = build_rag_graph(knowledge_bases={"releases": store})
    context = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(folder)}],
                          embedding="fake")  # fmt: skip
    out = _run(graph, "are requests retried with exponential backoff?", context)
    first = out["rag_candidates"][0]
    assert (first["kb"], first["source"]) == ("docs", "retry.md")
    store_ones = [c for c in out["rag_candidates"] if c["kb"] == "releases"]
    assert store_ones and all(c["score"] <= 0.5 for c in store_ones)
    similarity = [v for c in store_ones for k, v in c["scores"].items() if k.endswith(":vector")]
    assert similarity and max(similarity) < 0.5  # a cosine of the fake model, not a rank


def test_a_store_scored_by_rank_is_never_read_as_a_similarity(folder: Path) -> None:
    store = InMemoryVectorStore(FakeEmbeddings())
    store.add_documents(OFF_TOPIC)
    graph = build_rag_graph(knowledge_bases={"releases": store})
    out = _run(graph, "which icons were updated?", RagSettings(embedding="none"))
    assert {c["kb"] for c in out["rag_candidates"]} == {"releases"}
    names = {name for c in out["rag_candidates"] for name in c["ranks"]}
    assert names == {"q0:retriever"} or all(n.endswith(":retriever") for n in names)
    reasons = " ".join(out["rag_grounding"]["reasons"])
    assert "vector similarity" not in reasons
