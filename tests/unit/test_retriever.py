"""``KnowledgeBase.as_retriever()`` is a standard LangChain retriever: LangChain's own
retriever suite (``langchain-tests``) runs against it, and its documents carry the chunk's
text and where it came from. Real engine, ``fake`` embedding, a folder with non-ASCII and
CRLF files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from kbgraph.errors import ConfigError
from kbgraph.retrieval import KnowledgeBase, KnowledgeBaseRetriever, SearchFilters

DOCS = {
    "docs/retry.md": "# Retry policy\n\nFailed requests are retried with exponential backoff.\n"
    "Set max_attempts to change the number of attempts.\n",
    "docs/tokens.md": "# Tokens\n\nAccess tokens expire after one hour.\n",
    "notes/größe.txt": "Die Größe des Caches\r\nwird in Megabyte angegeben.\r\n",
    "src/client.py": "def retry(call):\n    # exponential backoff between attempts\n"
    "    return call()\n",
}


def make_kb(folder: Path) -> KnowledgeBase:
    for rel, text in DOCS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(text.encode("utf-8"))
    kb = KnowledgeBase(folder, embedding="fake")
    kb.index()
    return kb


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    return make_kb(tmp_path_factory.mktemp("kb"))


class TestStandardRetrieverSuite(RetrieversIntegrationTests):
    """LangChain's retriever contract: ``k`` in the constructor and per call, sync and
    async invocation returning ``Document`` lists."""

    knowledge_base: KnowledgeBase

    @pytest.fixture(autouse=True, scope="class")
    @classmethod
    def _knowledge_base(cls, tmp_path_factory: pytest.TempPathFactory) -> None:
        cls.knowledge_base = make_kb(tmp_path_factory.mktemp("standard"))

    @property
    def retriever_constructor(self) -> type[KnowledgeBaseRetriever]:
        return KnowledgeBaseRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"knowledge_base": self.knowledge_base, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "exponential backoff between attempts"


def test_documents_carry_the_chunk_text_and_its_place(kb: KnowledgeBase) -> None:
    docs = kb.as_retriever(top_k=3).invoke("Größe des Caches")
    result = kb.search("Größe des Caches", top_k=3)
    assert [d.id for d in docs] == [r.chunk.id for r in result]
    first = docs[0]
    assert first.page_content == "Die Größe des Caches\nwird in Megabyte angegeben."
    assert first.metadata == {
        "source": "notes/größe.txt",
        "line_start": 1,
        "line_end": 2,
        "chunk_id": result[0].chunk.id,
        "score": pytest.approx(result[0].score),
        "section": None,
        "page": None,
        "ranks": result[0].ranks,
    }
    lines = (kb.folder / "notes/größe.txt").read_text(encoding="utf-8").splitlines()
    assert "\n".join(lines[0:2]) == first.page_content


def test_mode_and_filters_reach_the_search(kb: KnowledgeBase) -> None:
    only_code = kb.as_retriever(top_k=5, mode="bm25", filters=SearchFilters(kinds=("code",)))
    docs = only_code.invoke("exponential backoff")
    assert [d.metadata["source"] for d in docs] == ["src/client.py"]
    assert set(docs[0].metadata["ranks"]) == {"bm25"}
    # Per-call options override the retriever's own, as LangChain's ``k`` does.
    md = only_code.invoke("exponential backoff", filters=SearchFilters(kinds=("markdown",)))
    assert [d.metadata["source"] for d in md] == ["docs/retry.md"]


def test_async_gives_the_same_documents(kb: KnowledgeBase) -> None:
    retriever = kb.as_retriever(top_k=3)
    sync = retriever.invoke("access tokens expire")
    assert asyncio.run(retriever.ainvoke("access tokens expire")) == sync


@pytest.mark.parametrize("options", [{"k": 0}, {"k": "3"}, {"top_n": 3}])
def test_bad_per_call_options_are_config_errors(kb: KnowledgeBase, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"k|top_n"):
        kb.as_retriever().invoke("tokens", **options)


def test_in_an_lcel_chain(kb: KnowledgeBase) -> None:
    """Retriever → formatted context → prompt, composed with ``|`` as LCEL users do."""

    def format_docs(docs: list[Document]) -> str:
        return "\n".join(
            f"[{i}] {d.metadata['source']}:{d.metadata['line_start']}-{d.metadata['line_end']}"
            for i, d in enumerate(docs, 1)
        )

    prompt = ChatPromptTemplate.from_template("Sources:\n{context}\n\nQuestion: {question}")
    chain = {
        "context": kb.as_retriever(top_k=1) | RunnableLambda(format_docs),
        "question": RunnableLambda(lambda q: q),
    } | prompt
    value = chain.invoke("When do access tokens expire?")
    assert "[1] docs/tokens.md:1-3" in value.to_string()


@pytest.mark.parametrize(
    ("arguments", "k", "sources"),
    [
        ({"k": 3}, 3, None),
        ({"search_kwargs": {"k": 2}}, 2, None),
        ({"search_type": "similarity", "search_kwargs": {"k": 4}}, 4, None),
        ({"top_k": 2, "search_kwargs": {"k": 2}}, 2, None),
        ({"search_kwargs": {"k": 5, "filter": {"paths": ["notes/**"]}}}, 5, {"notes/größe.txt"}),
        ({"search_kwargs": {"filters": SearchFilters(kinds=("code",))}}, 5, {"src/client.py"}),
        ({"filters": {"kinds": ["code"]}, "search_kwargs": {"mode": "bm25"}}, 5, {"src/client.py"}),
    ],
    ids=["k", "search_kwargs-k", "search_type", "same-k-twice", "filter-dict", "filters", "mode"],
)
def test_langchain_spellings_of_as_retriever(
    kb: KnowledgeBase, arguments: dict[str, Any], k: int, sources: set[str] | None
) -> None:
    """Regression (issue 20): ``as_retriever(k=3)`` and ``as_retriever(search_kwargs={"k":
    2})``, as LangChain users write them for any vector store, raised TypeError."""
    retriever = kb.as_retriever(**arguments)
    assert retriever.k == k
    docs = retriever.invoke("Größe retry backoff tokens")
    assert 1 <= len(docs) <= k
    if sources is not None:
        assert {d.metadata["source"] for d in docs} == sources


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"search_kwargs": {"k": 2, "fetch_k": 20}}, r"\['fetch_k'\]; allowed: k, mode, filters"),
        ({"search_kwargs": {"score_threshold": 0.8}}, r"allowed: k, mode, filters, filter"),
        ({"search_type": "mmr"}, r"search_type 'mmr' is not supported.*mode"),
        ({"top_k": 2, "k": 3}, r"k is given more than once .*top_k=2, k=3"),
        ({"k": True}, r"k is True; it must be a whole number from 1 to 1000"),
        ({"k": 0}, r"from 1 to 1000"),
        ({"search_kwargs": {"filter": {"source": "a.md"}}}, r"no setting 'source'.*paths"),
        ({"search_kwargs": {"filter": {}, "filters": {}}}, r"both filter and filters"),
        ({"search_kwargs": [("k", 2)]}, r"search_kwargs must be a dict"),
    ],
    ids=[
        "fetch_k",
        "score_threshold",
        "mmr",
        "k-twice",
        "bool",
        "zero",
        "metadata",
        "both",
        "list",
    ],
)
def test_what_as_retriever_cannot_do_is_a_config_error(
    kb: KnowledgeBase, arguments: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        kb.as_retriever(**arguments)


def test_a_bool_k_is_refused_by_the_retriever_itself(kb: KnowledgeBase) -> None:
    with pytest.raises(ValueError, match="k"):
        KnowledgeBaseRetriever(knowledge_base=kb, k=True)
