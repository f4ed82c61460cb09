"""The chat agent (subgraph → answer → extract_citations), the ReAct tool agent, the
extractive answer and the ``ask`` command, on real folders indexed with the ``fake``
embedding; chat models are scripted."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from kbgraph.agents import _trace, build_chat_agent, build_tool_agent, chat_agent
from kbgraph.agents._ask import ask, json_view
from kbgraph.errors import ConfigError
from kbgraph.graphs import _extractive, _passages
from kbgraph.graphs._settings import AnswerCheckSettings, RagSettings
from kbgraph.graphs._subgraph import NODE_ORDER, build_rag_graph
from kbgraph.graphs._tool import TOOL_NAME
from kbgraph.graphs._turns import marker_of
from kbgraph.testing import ScriptedChatModel, tool_call_message

DOCS = {
    "retry.md": "# Retry policy\n\nThe client retries failed requests with exponential backoff.\n"
    "Set `max_attempts` in `client.toml` to change the number of retries.\n",
    "tokens.md": "# Tokens\n\nAccess tokens expire after one hour.\nRefresh tokens expire after "
    "thirty days.\n",
    "cache/größe.md": "# Cache-Größe\r\n\r\nDie Größe des Caches wird in Megabyte angegeben.\r\n",
}
RETRY_QUESTION = "How do I change the number of retries?"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    return root


@pytest.fixture(scope="module")
def settings(docs: Path) -> RagSettings:
    return RagSettings(knowledge_bases=[{"name": "docs", "folder": str(docs)}], embedding="fake")


def _ask(graph: Any, question: str, settings: RagSettings, **config: Any) -> dict[str, Any]:
    return dict(graph.invoke({"messages": [HumanMessage(question)]}, context=settings, **config))


def _flagging(settings: RagSettings) -> RagSettings:
    """``settings`` with answers checked and flagged, never replaced."""
    return settings.model_copy(update={"answer_check": AnswerCheckSettings(policy="flag")})


def _trajectory(graph: Any, question: str, settings: RagSettings) -> list[str]:
    """Node names in the order they finished, subgraph nodes prefixed ``rag/``."""
    order = []
    for namespace, update in graph.stream(
        {"messages": [HumanMessage(question)]},
        context=settings,
        stream_mode="updates",
        subgraphs=True,
    ):
        prefix = "rag/" if namespace else ""
        order += [prefix + node for node in update]
    return order


def _file_passage(folder: Path, source: str, first: int, last: int) -> str:
    lines = (folder / source).read_bytes().decode("utf-8").splitlines()[first - 1 : last]
    return " ".join(" ".join(lines).split())


# -- chat agent without a chat model -----------------------------------------------------


def test_extractive_answer_quotes_cited_lines_exactly(docs: Path, settings: RagSettings) -> None:
    out = _ask(chat_agent, RETRY_QUESTION, settings)
    answer = out["answer"]
    assert out["answer_mode"] == "extractive"
    assert answer.startswith("Extractive answer (no chat model configured):")
    reply = out["messages"][-1]
    assert isinstance(reply, AIMessage) and reply.text == answer
    assert marker_of(reply) == {
        "retrieved": True, "grounded": True, "mode": "extractive",
        "sources": [
            {"kb": c["kb"], "source": c["source"], "section": c["section"]}
            for c in out["rag_citations"][:3]
        ],
    }  # fmt: skip
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert bullets
    for bullet in bullets:
        quote, rest = bullet[2:].rsplit(" [", 1)
        n, where = rest.split("] (")
        source, span = where.rstrip(")").rsplit(":", 1)
        first, _, last = span.partition("-")
        # Whole sentences of the cited lines, their markup (`code`, **bold**) taken off.
        assert quote in _passages.clean(_file_passage(docs, source, int(first), int(last or first)))
        assert out["rag_citations"][int(n) - 1]["source"] == source
    assert "max_attempts" in answer
    assert not any(b.lstrip("- ").startswith("#") for b in bullets), "headings are not quotes"


def test_extractive_answer_markers_resolve_with_offsets(settings: RagSettings) -> None:
    out = _ask(chat_agent, RETRY_QUESTION, settings)
    assert out["answer_citations"]
    assert out["answer_unresolved"] == []
    for c in out["answer_citations"]:
        assert out["answer"][c["start"] : c["end"]] == c["marker"]
        assert c["chunk_id"] == out["rag_citations"][c["n"] - 1]["chunk_id"]


def test_chat_agent_trajectory_runs_the_seven_nodes_then_answers(settings: RagSettings) -> None:
    order = _trajectory(chat_agent, RETRY_QUESTION, settings)
    assert order == [f"rag/{n}" for n in NODE_ORDER] + [
        "rag",
        "answer",
        "extract_citations",
        "check_answer",
    ]


@pytest.mark.parametrize("greeting", ["hello!", "Merci beaucoup", "thanks, bye"])
def test_small_talk_skips_retrieval_and_answers_politely(
    settings: RagSettings, greeting: str
) -> None:
    assert _trajectory(chat_agent, greeting, settings) == [
        "rag/decide_retrieve",
        "rag",
        "answer",
        "extract_citations",
        "check_answer",
    ]
    out = _ask(chat_agent, greeting, settings)
    assert out["rag_should_retrieve"] is False
    assert out["answer_mode"] == "small_talk"
    assert "docs" in out["answer"]
    assert out["rag_citations"] == out["answer_citations"] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thanks, that was helpful!", "You are welcome!"),
        ("bye!", "Goodbye!"),
        ("thanks, bye", "Goodbye!"),
        ("hello!", "Hello!"),
    ],
)
def test_small_talk_replies_fit_what_was_said(
    settings: RagSettings, text: str, expected: str
) -> None:
    out = _ask(chat_agent, text, settings)
    assert out["answer"].startswith(expected)
    assert "docs" in out["answer"]


def test_a_repeated_question_is_searched_again_until_it_was_answered(
    settings: RagSettings,
) -> None:
    graph = build_chat_agent(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "repeat"}}
    off_topic = "What is the boiling point of tungsten?"
    assert _ask(graph, off_topic, settings, config=config)["answer_mode"] == "not_grounded"
    again = _ask(graph, off_topic, settings, config=config)
    assert again["rag_should_retrieve"] is True, "an unanswered question is searched again"
    assert _ask(graph, RETRY_QUESTION, settings, config=config)["rag_grounded"] is True
    repeated = _ask(graph, RETRY_QUESTION, settings, config=config)
    assert repeated["rag_should_retrieve"] is False and repeated["answer_mode"] == "answered"


def test_trace_says_retrieval_skipped_once(settings: RagSettings) -> None:
    out = _ask(chat_agent, "hello!", settings)
    assert _trace.verdict_lines(out) == ["Retrieval skipped: small talk needs no documents"]


def test_the_guidance_of_an_answer_that_gave_up_is_printed_once(settings: RagSettings) -> None:
    # "What is the capital of France?" printed each "try:" hint under "What to try:" in the
    # answer and again under "Grounded: no".
    out = _ask(chat_agent, "What is the boiling point of tungsten?", settings)
    guidance = out["rag_grounding"]["guidance"]
    assert guidance and all(g in out["answer"] for g in guidance)
    lines = _trace.verdict_lines(out)
    assert lines[0].startswith("Grounded: no") and not any("try:" in line for line in lines)
    without = {**out, "answer": "Nothing found."}
    assert [line for line in _trace.verdict_lines(without) if "try:" in line]


def test_after_a_node_times_out_the_answer_is_still_asked_of_the_model(
    settings: RagSettings,
) -> None:
    # A slow model is not a down one: each node's timeout falls back for that node only.
    answer = "Set retry.max_attempts [1]."
    model = ScriptedChatModel(
        responses=[TimeoutError("slow"), TimeoutError("slow"), TimeoutError("slow")],
        default=answer,
    )
    out = _ask(build_chat_agent(chat_model=model), RETRY_QUESTION, _flagging(settings))
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert fallbacks[0]["node"] == "decide_retrieve" and "outage" not in fallbacks[0]
    assert not any(f["stage"] == "skipped" for f in fallbacks)
    assert out["answer_mode"] == "llm" and out["answer"] == answer
    assert out["answer_error"] is None and model.calls[-1].structured is None


def test_after_an_outage_the_answer_does_not_call_the_model_either(
    settings: RagSettings,
) -> None:
    model = ScriptedChatModel(responses=[ConnectionError("refused")])
    out = _ask(build_chat_agent(chat_model=model), RETRY_QUESTION, settings)
    assert len(model.calls) == 1
    assert out["answer_mode"] == "fallback" and out["answer"].startswith("Extractive answer")
    assert out["answer_error"].startswith("chat model not called: decide_retrieve found it down")
    assert out["answer_citations"]


def test_off_topic_question_is_not_grounded_and_passes_the_guidance_on(
    settings: RagSettings,
) -> None:
    out = _ask(chat_agent, "What is the boiling point of tungsten?", settings)
    assert out["rag_grounded"] is False
    assert out["answer_mode"] == "not_grounded"
    answer = out["answer"]
    assert answer.startswith("I could not find an answer to this in docs.")
    for item in out["rag_grounding"]["guidance"] + out["rag_grounding"]["reasons"]:
        assert f"- {item}" in answer
    assert "tungsten" in answer
    assert out["answer_citations"] == []


def test_second_turn_small_talk_does_not_reuse_the_first_turns_sources(
    settings: RagSettings,
) -> None:
    graph = build_chat_agent(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    first = _ask(graph, RETRY_QUESTION, settings, config=config)
    assert first["answer_citations"]
    second = _ask(graph, "thank you!", settings, config=config)
    assert second["rag_citations"] == second["answer_citations"] == []
    assert [type(m).__name__ for m in second["messages"]] == [
        "HumanMessage", "AIMessage", "HumanMessage", "AIMessage",
    ]  # fmt: skip


def test_follow_up_question_is_made_standalone_and_finds_the_file(
    settings: RagSettings,
) -> None:
    graph = build_chat_agent(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "follow-up"}}
    _ask(graph, "When do access tokens expire?", settings, config=config)
    out = _ask(graph, "And the refresh ones?", settings, config=config)
    assert out["rag_queries"][0] == "And the refresh ones?"
    assert any("tokens" in q for q in out["rag_queries"][1:]), "rewritten with the topic"
    assert out["rag_citations"][0]["source"] == "tokens.md"
    assert "Refresh tokens expire after thirty days." in out["answer"]


def test_exported_graphs_have_no_checkpointer() -> None:
    from kbgraph.agents import tool_agent

    assert chat_agent.checkpointer is None
    assert tool_agent.checkpointer is None


def test_the_old_import_path_still_works_with_a_deprecation_warning() -> None:
    from kbgraph.agents import tool_agent

    # The old module is a stand-in of kbgraph._moved: it warns once when it loads (its
    # compiled graphs are copied in, for LangGraph's server, which reads ``__dict__``), a
    # FutureWarning so that langgraph dev shows it by default (issue 42 hole 14).
    sys.modules.pop("kbgraph.graphs.agents", None)
    with pytest.warns(FutureWarning, match="kbgraph.graphs.agents is gone since kbgraph 0.2"):
        from kbgraph.graphs.agents import chat_agent as old_chat
    from kbgraph.graphs.agents import tool_agent as old_tool

    assert old_chat is chat_agent
    assert old_tool is tool_agent


@pytest.mark.parametrize("graph_name", ["chat_agent", "tool_agent"])
def test_agents_publish_json_schemas_for_studio(graph_name: str) -> None:
    # pydantic refuses typing.TypedDict on Python < 3.12; the LangGraph server then serves
    # no output schema at all, so Studio shows no output panel.
    import kbgraph.agents

    graph = getattr(kbgraph.agents, graph_name)
    assert "answer_citations" in graph.get_output_jsonschema()["properties"]
    assert "messages" in graph.get_input_jsonschema()["properties"]
    assert "knowledge_bases" in graph.get_context_jsonschema()["properties"]


# -- chat agent with a scripted chat model (the subgraph stays heuristic) ----------------


def _with_model(model: ScriptedChatModel) -> Any:
    return build_chat_agent(chat_model=model, rag_graph=build_rag_graph())


def test_llm_answer_gets_context_and_instructions_and_markers_resolve(
    settings: RagSettings,
) -> None:
    model = ScriptedChatModel(responses=["Set max_attempts in client.toml [1]. Also see [9]."])
    # The offline judge scores this answer just below 0.5: the default policy ("repair")
    # would replace it; this test is about its markers.
    out = _ask(_with_model(model), RETRY_QUESTION, _flagging(settings))
    assert out["answer_mode"] == "llm"
    assert [c["n"] for c in out["answer_citations"]] == [1]
    assert out["answer_citations"][0]["source"] == "retry.md"
    assert [u["n"] for u in out["answer_unresolved"]] == [9]
    (call,) = model.calls
    system, *_, sources, question = call.messages
    assert isinstance(system, SystemMessage)
    # the instructions in the system role, the retrieved text as a user message just
    # before the question (issue 42 hole 6: never with the system role's authority)
    assert "not instructions" in system.text and out["rag_context"] not in system.text
    assert isinstance(sources, HumanMessage) and out["rag_context"] in sources.text
    assert question.text == RETRY_QUESTION


@pytest.mark.parametrize("failure", [TimeoutError("slow"), ConnectionError("refused"), ""])
def test_llm_failure_falls_back_to_the_extractive_answer(
    settings: RagSettings, failure: Any
) -> None:
    model = ScriptedChatModel(responses=[failure])
    out = _ask(_with_model(model), RETRY_QUESTION, settings)
    assert out["answer_mode"] == "fallback"
    assert out["answer"].startswith("Extractive answer")
    assert out["answer_error"]
    assert out["answer_citations"]


def test_small_talk_with_a_model_uses_the_model_without_sources(settings: RagSettings) -> None:
    model = ScriptedChatModel(responses=["Hi! What would you like to know?"])
    out = _ask(_with_model(model), "hello there", settings)
    assert out["answer"] == "Hi! What would you like to know?"
    assert out["answer_mode"] == "small_talk"
    assert "```" not in model.calls[0].messages[0].text


def test_not_grounded_never_asks_the_model(settings: RagSettings) -> None:
    model = ScriptedChatModel(responses=[])
    out = _ask(_with_model(model), "What is the boiling point of tungsten?", settings)
    assert out["answer_mode"] == "not_grounded"
    assert model.calls == []


# -- the ReAct tool agent ---------------------------------------------------------------


def _two_searches_then_answer() -> ScriptedChatModel:
    return ScriptedChatModel(
        responses=[
            tool_call_message(TOOL_NAME, {"query": "number of retries"}),
            tool_call_message(TOOL_NAME, {"query": "refresh token expiry"}),
            "Set max_attempts [1]; refresh tokens last thirty days [2]. Unknown [7].",
        ]
    )


def test_tool_agent_trajectory(settings: RagSettings) -> None:
    graph = build_tool_agent(chat_model=_two_searches_then_answer())
    order = [
        node
        for update in graph.stream(
            {"messages": [HumanMessage("retries and tokens?")]},
            context=settings,
            stream_mode="updates",
        )
        for node in update
    ]
    assert order == [
        "agent", "tools", "agent", "tools", "agent", "extract_citations", "check_answer",
    ]  # fmt: skip


def test_tool_agent_resolves_markers_against_every_search(settings: RagSettings) -> None:
    model = _two_searches_then_answer()
    out = _ask(build_tool_agent(chat_model=model), "retries and tokens?", _flagging(settings))
    places = [(c["source"], c["line_start"], c["line_end"]) for c in out["rag_citations"]]
    numbers = [c["n"] for c in out["rag_citations"]]
    assert len(set(places)) == len(places) == len(set(numbers)), "one number per source"
    by_n = {c["n"]: c for c in out["rag_citations"]}
    assert [c["n"] for c in out["answer_citations"]] == [1, 2]
    for c in out["answer_citations"]:
        assert (c["source"], c["chunk_id"]) == (by_n[c["n"]]["source"], by_n[c["n"]]["chunk_id"])
        assert out["answer"][c["start"] : c["end"]] == c["marker"]
    assert [u["n"] for u in out["answer_unresolved"]] == [7]
    assert model.bound_tools == [TOOL_NAME]
    system = model.calls[0].messages[0]
    assert isinstance(system, SystemMessage)
    assert "docs" in system.text


def test_tool_agent_bounds_the_number_of_searches(settings: RagSettings) -> None:
    model = ScriptedChatModel(default=tool_call_message(TOOL_NAME, {"query": "retries"}))
    out = _ask(build_tool_agent(chat_model=model, max_searches=2), "retries?", settings)
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 2
    assert out["answer"].startswith("I stopped before finishing")


def test_tool_agent_without_a_chat_model_says_how_to_configure_one(
    settings: RagSettings,
) -> None:
    from kbgraph.agents import tool_agent

    with pytest.raises(ConfigError, match="needs a chat model"):
        _ask(tool_agent, "retries?", settings)


# -- extractive answer (pure) -----------------------------------------------------------


def _citation(n: int, text: str, start: int = 1, source: str = "a.md") -> dict[str, Any]:
    end = start + text.count("\n")
    return {"n": n, "source": source, "line_start": start, "line_end": end, "text": text}


def test_best_quotes_pick_matching_lines_with_file_line_numbers() -> None:
    text = "# Größe\nUnrelated words here.\nDie Größe des Caches in Megabyte.\nMore filler."
    quotes = _extractive.best_quotes(
        "Größe Caches", [_citation(3, text, start=10)], lines_per_source=1
    )
    assert [(q.n, q.text, q.first, q.last) for q in quotes] == [
        (3, "Die Größe des Caches in Megabyte.", 12, 12)
    ]


def test_best_quotes_keep_file_order_within_a_source() -> None:
    text = "cache two.\nfiller.\ncache one."
    quotes = _extractive.best_quotes("cache one two", [_citation(1, text)])
    assert [(q.first, q.last) for q in quotes] == [(1, 1), (3, 3)]


@pytest.mark.parametrize(
    ("lines", "picked", "spans"),
    [
        (["Retries back off", "exponentially.", "Next."], [0], [(0, 1)]),
        (["One.", "Two.", "Three."], [0, 1], [(0, 1)]),
        (["One.", "Two.", "Three."], [0, 2], [(0, 0), (2, 2)]),
        (["no end", "still none", "nor here", "nor here either"], [0], [(0, 2)]),
        (["no end", "", "after a blank"], [0], [(0, 0)]),
        (["no end", "## Heading"], [0], [(0, 0)]),
        (["Größe ist", "wichtig。"], [0], [(0, 1)]),
        (["last line without end"], [0], [(0, 0)]),
    ],
)
def test_passages_finish_sentences_and_merge(
    lines: list[str], picked: list[int], spans: list[tuple[int, int]]
) -> None:
    assert _extractive.passages(lines, picked) == spans


def test_wrapped_sentence_is_quoted_whole_with_its_line_range() -> None:
    text = "Intro.\nSet max_attempts in client.toml to change\nthe number of retries."
    (quote,) = _extractive.best_quotes("max_attempts", [_citation(2, text, start=5)])
    assert quote.text == "Set max_attempts in client.toml to change the number of retries."
    assert (quote.first, quote.last) == (6, 7)
    assert "(a.md:6-7)" in _extractive.render("Header", [quote])


def test_sources_without_a_matching_line_are_skipped_when_others_match() -> None:
    quotes = _extractive.best_quotes(
        "retry backoff",
        [_citation(1, "Retries use backoff."), _citation(2, "Tokens expire.", source="t.md")],
    )
    assert {q.n for q in quotes} == {1}


def test_brackets_inside_quoted_text_are_not_read_as_citations() -> None:
    from kbgraph.graphs._citations import extract_citations

    citation = _citation(1, "See footnote [2] about retries.")
    answer = _extractive.render("H", _extractive.best_quotes("retries", [citation]))
    report = extract_citations(answer, [citation])
    assert [c["n"] for c in report.citations] == [1]
    assert report.unresolved == []


def test_line_numbers_are_omitted_when_text_and_range_disagree() -> None:
    citation = {**_citation(1, "one\ntwo"), "line_end": 40}
    quotes = _extractive.best_quotes("one", [citation])
    assert quotes and all(q.first is None and q.last is None for q in quotes)
    assert _extractive.render("H", quotes).endswith("[1] (a.md)")


def test_line_scores_follow_idf() -> None:
    scores = _extractive.line_scores("retry cache", ["retry", "retry", "cache", "nothing"])
    assert scores[2] > scores[0] == scores[1] > scores[3] == 0


# -- the ask command --------------------------------------------------------------------


def test_ask_json_prints_only_json_with_the_contract_keys(docs: Path) -> None:
    result = CliRunner().invoke(ask, [str(docs), RETRY_QUESTION, "--json", "--embedding", "fake"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rag_grounded"] is True
    assert set(data["rag_citations"][0]) == {
        "n", "source", "line_start", "line_end", "chunk_id", "score", "text",
    }  # fmt: skip
    assert {"answer", "rag_context", "rag_grounding", "rag_queries"} <= set(data)


def test_ask_human_output_with_trace(docs: Path) -> None:
    result = CliRunner().invoke(
        ask, [str(docs), RETRY_QUESTION, "--trace", "--embedding", "fake", "--top-k", "2"]
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    for node in NODE_ORDER:
        assert f" {node} [attempt 0" in out
    assert "Sources:\n  [1] retry.md, lines 1-4" in out
    assert "Grounded: yes" in out


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--embedding", "nonsense:x:y"], 2, "kbgraph ask: "),
        (["--chat-model", "nosuch:model"], 2, "not one LangChain can build"),
    ],
)
def test_ask_fails_with_one_line(docs: Path, args: list[str], code: int, message: str) -> None:
    result = CliRunner().invoke(ask, [str(docs), "q", *args])
    assert result.exit_code == code
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_ask_continues_a_conversation_from_its_json_output(docs: Path, tmp_path: Path) -> None:
    first = CliRunner().invoke(
        ask, [str(docs), "When do access tokens expire?", "--json", "--embedding", "fake"]
    )
    assert first.exit_code == 0, first.output
    turn = tmp_path / "turn1.json"
    turn.write_text(first.stdout, encoding="utf-8")
    messages = json.loads(first.stdout)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["response_metadata"]["kbgraph"]["grounded"] is True
    args = [str(docs), "And the refresh ones?", "--json", "--embedding", "fake"]
    alone = json.loads(CliRunner().invoke(ask, args).stdout)
    follow = CliRunner().invoke(ask, [*args, "--history", str(turn)])
    assert follow.exit_code == 0, follow.output
    data = json.loads(follow.stdout)
    assert not any("tokens" in q for q in alone["rag_queries"])
    assert any("tokens" in q for q in data["rag_queries"][1:])
    assert data["rag_citations"][0]["source"] == "tokens.md"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] * 2


def test_ask_history_as_a_plain_message_list_from_stdin(docs: Path) -> None:
    history = [
        {"role": "user", "content": RETRY_QUESTION},
        {"role": "assistant", "content": "Set max_attempts in client.toml."},
    ]
    result = CliRunner().invoke(
        ask,
        [str(docs), "Can you repeat that?", "--json", "--embedding", "fake", "--history", "-"],
        input=json.dumps(history),
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rag_should_retrieve"] is False and data["answer_mode"] == "answered"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "--history is not JSON"),
        ('{"answer": "x"}', "--history holds no list of messages"),
        ('[{"role": "tool", "content": "x", "tool_call_id": "c"}]', "not tool"),
        ('[{"role": "user"}]', "has a message that is not one"),
    ],
)
def test_ask_rejects_a_bad_history(docs: Path, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "history.json"
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(ask, [str(docs), "q", "--history", str(path)])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_json_view_keeps_the_chunk_id_key() -> None:
    state = {
        "answer": "a",
        "rag_citations": [{"n": 1, "chunk_id": "abc", "source": "s", "kb": "k"}],
    }
    assert json_view(state)["rag_citations"][0]["chunk_id"] == "abc"


def test_trace_lines_cover_unknown_nodes_and_fallbacks() -> None:
    state = {
        "rag_retrieval_debug": {
            "steps": [{"node": "custom", "attempt": 0, "path": "llm", "ms": 1.0, "data": {"x": 1}}],
            "fallbacks": [{"node": "custom", "stage": "json", "error": "bad json"}],
        },
        "answer_mode": "fallback",
        "answer_error": "TimeoutError: slow",
    }
    lines = _trace.trace_lines(state)
    assert lines[0] == '1. custom [attempt 0, llm, 1 ms] {"x": 1}'
    assert "bad json" in lines[1]
    assert lines[2] == "2. answer [fallback] chat model failed: TimeoutError: slow"


# -- issue 30: quotes that state the fact -------------------------------------------------

RST_PAGE = """Configuration Handling
======================

.. admonition:: Keep it secret

   The **SECRET_KEY** signs the session cookie, see :data:`SECRET_KEY`.

A good secret key is random. Use this command to generate a secret key:

.. code-block:: text

    $ python -c 'import secrets; print(secrets.token_hex())'

Uploads are refused above ``MAX_CONTENT_LENGTH``. To limit the upload size, set the
key::

    app.config['MAX_CONTENT_LENGTH'] = 16 * 1000 * 1000
"""


def _answer(question: str, text: str, source: str = "config.rst") -> str:
    citation = _citation(1, text.rstrip("\n"), source=source)
    return _extractive.render("H", _extractive.best_quotes(question, [citation]))


def test_a_sentence_that_introduces_a_command_or_config_line_brings_it() -> None:
    secret = _answer("How do I generate a secret key?", RST_PAGE)
    assert "$ python -c 'import secrets; print(secrets.token_hex())'" in secret
    assert "Use this command to generate a secret key:" in secret
    upload = _answer("How do I limit the upload size?", RST_PAGE)
    assert "app.config['MAX_CONTENT_LENGTH'] = 16 * 1000 * 1000" in upload
    assert "(config.rst:14-17)" in upload  # the sentence through the code line


def test_quotes_carry_no_markup_and_no_heading() -> None:
    answer = _answer("What does the secret key sign?", RST_PAGE)
    assert "The SECRET_KEY signs the session cookie, see SECRET_KEY. [1] (config.rst:6)" in answer
    for markup in ("..", "admonition", "**", ":data:", "``", "====", "Configuration Handling"):
        assert markup not in answer.split("\n", 1)[1], markup
    markdown = "## Limits\n\nThe **default** limit is `10` [requests](limits.md) per *second*.\n"
    assert "- The default limit is 10 requests per second. [1]" in _answer(
        "What is the default limit?", markdown, "limits.md"
    )


def test_a_quote_never_starts_mid_sentence() -> None:
    text = (
        "Sessions are cookies. It is stored in a cookie and the permanent session\n"
        "lifetime is 31 days.\n"
        "- A list item that wraps\n  onto a second line about the lifetime in days.\n"
    )
    answer = _answer("lifetime days", text, "sessions.md")
    assert "- It is stored in a cookie and the permanent session lifetime is 31 days. [1] " in (
        answer
    )
    assert "- A list item that wraps onto a second line about the lifetime in days. [1]" in answer
    assert "Sessions are cookies." not in answer


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--llm-timeout", "7.5"], {}, 7.5),
        ([], {"KBGRAPH_LLM_TIMEOUT": "12"}, 12.0),
        (["--llm-timeout", "3"], {"KBGRAPH_LLM_TIMEOUT": "12"}, 3.0),
        ([], {}, RagSettings().llm_timeout_seconds),
    ],
)
def test_ask_takes_the_llm_timeout_from_its_option_or_the_environment(
    docs: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    expected: float,
) -> None:
    import kbgraph.agents._chat as chat_module

    seen: list[float] = []
    real = chat_module.compose_answer

    def spy(state: Any, settings: RagSettings, model: Any) -> Any:
        seen.append(settings.llm_timeout_seconds)
        return real(state, settings, model)

    monkeypatch.setattr(chat_module, "compose_answer", spy)
    monkeypatch.delenv("KBGRAPH_LLM_TIMEOUT", raising=False)
    argv = [str(docs), RETRY_QUESTION, "--json", "--embedding", "fake", *args]
    result = CliRunner(env=env).invoke(ask, argv)
    assert result.exit_code == 0, result.output
    assert seen == [expected]


def test_ask_refuses_a_timeout_that_is_not_positive(docs: Path) -> None:
    result = CliRunner().invoke(ask, [str(docs), "q", "--llm-timeout", "0"])
    assert result.exit_code == 2 and "--llm-timeout" in result.stderr
