"""Every answer a chat model writes is checked against the sources it cites: the
``check_answer`` node of both ready agents, its policies, ``kbgraph ask``'s report and
:func:`kbgraph.evals.check_answer` for agents of your own. Judges are scripted here; the
offline judge on a made-up number is tests/integration/test_answer_check_real.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from kbgraph.agents import _trace, build_chat_agent, build_tool_agent
from kbgraph.agents._ask import json_view
from kbgraph.evals import check_answer
from kbgraph.evals._evaluators.faithfulness import UNSTATED_CAP
from kbgraph.evals._judges import OfflineJudge
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._tool import TOOL_NAME
from kbgraph.graphs._turns import marker_of
from kbgraph.testing import FakeEmbeddings, ScriptedChatModel, ScriptedJudge, tool_call_message

DOCS = {
    "retry.md": "# Retry policy\n\nThe client retries failed requests 4 times with exponential "
    "backoff.\nSet `max_attempts` in `client.toml` to change the number of retries.\n",
    "cache/größe.md": "# Cache-Größe\r\n\r\nDie Größe des Caches wird in Megabyte angegeben.\r\n",
}
QUESTION = "How many times does the client retry a failed request?"
MADE_UP = "The client retries failed requests 9 times [1]."
TRUE = "The client retries failed requests 4 times [1]."


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    return root


def _settings(docs: Path, **check: Any) -> RagSettings:
    return RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}],
        embedding="fake",
        answer_check=check,  # type: ignore[arg-type]
    )


def _judge() -> ScriptedJudge:
    """Supports what the retry document says, nothing else."""
    return ScriptedJudge(rules=[lambda claim, context: "supported" if "4 times" in claim else None])


def _model(*answers: str) -> ScriptedChatModel:
    # Every node of the subgraph falls back to its heuristic on a reply that is no JSON;
    # the answers are then the replies of the answer node (and of a regeneration).
    return ScriptedChatModel(
        responses=[ValueError("no JSON")] * 8 + list(answers), default=answers[-1]
    )


def _ask(docs: Path, model: ScriptedChatModel, judge: Any = None, **check: Any) -> dict[str, Any]:
    agent = build_chat_agent(chat_model=model, answer_judge=judge or _judge())
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=_settings(docs, **check))
    return dict(out)


def test_an_answer_with_a_made_up_number_is_flagged_with_its_claim(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP), policy="flag")
    check = out["answer_check"]
    assert out["answer"] == MADE_UP and out["answer_mode"] == "llm"
    assert check["score"] == 0.0 and check["judge"] == "scripted"
    assert check["policy"] == "flag" and check["action"] == "flagged"
    (claim,) = check["claims"]
    assert claim["text"] == "The client retries failed requests 9 times."
    assert claim["supported"] is False and claim["citations"] == [1]
    assert claim["evidence"] is None


def test_a_supported_claim_names_its_evidence_chunk(docs: Path) -> None:
    out = _ask(docs, _model(TRUE))
    (claim,) = out["answer_check"]["claims"]
    assert claim["supported"] is True
    assert claim["evidence"] == out["rag_citations"][0]["chunk_id"]
    assert out["answer_check"]["action"] == "none"


def test_regenerate_writes_once_more_naming_the_unsupported_claims(docs: Path) -> None:
    model = _model(MADE_UP, TRUE)
    out = _ask(docs, model, policy="regenerate")
    assert out["answer"] == TRUE and out["answer_check"]["action"] == "regenerated"
    assert out["answer_check"]["first"]["score"] == 0.0
    asked = model.calls[-1].messages[-1].content
    assert "The client retries failed requests 9 times." in asked
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert [m.text for m in replies] == [TRUE]  # the first answer's message was replaced
    assert marker_of(replies[0])["mode"] == "llm"  # type: ignore[index]
    assert [c["n"] for c in out["answer_citations"]] == [1]


def test_a_regeneration_that_is_no_better_keeps_the_first_answer(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP, "Nine retries [1]."), policy="regenerate")
    assert out["answer"] == MADE_UP and out["answer_check"]["action"] == "flagged"


def test_extractive_replaces_an_answer_below_the_threshold(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP), policy="extractive", threshold=0.5)
    assert out["answer_mode"] == "extractive" and out["answer_check"]["action"] == "replaced"
    assert out["answer"].startswith("Extractive answer")
    assert [m.text for m in out["messages"] if isinstance(m, AIMessage)] == [out["answer"]]


def test_off_checks_nothing(docs: Path) -> None:
    judge = _judge()
    out = _ask(docs, _model(MADE_UP), judge, policy="off")
    assert out["answer_check"] is None and judge.calls == []


def test_an_extractive_answer_is_not_the_models_and_is_not_checked(docs: Path) -> None:
    judge = _judge()
    agent = build_chat_agent(answer_judge=judge)
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=_settings(docs))
    assert out["answer_mode"] == "extractive" and out["answer_check"] is None
    assert judge.calls == []


def test_a_failing_judge_leaves_the_answer_and_says_why(docs: Path) -> None:
    class Broken(ScriptedJudge):
        def judge_claims(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("judge down")

    out = _ask(docs, _model(MADE_UP), Broken(), policy="extractive")
    assert out["answer"] == MADE_UP
    assert out["answer_check"]["score"] is None
    assert "judge down" in out["answer_check"]["error"]


def test_the_tool_agent_checks_its_final_answer(docs: Path) -> None:
    model = ScriptedChatModel(
        responses=[tool_call_message(TOOL_NAME, {"query": "retry failed requests"}), MADE_UP]
    )
    agent = build_tool_agent(chat_model=model, answer_judge=_judge())
    context = _settings(docs, policy="flag")
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    assert out["answer_check"]["claims"][0]["supported"] is False
    assert out["answer_check"]["action"] == "flagged"


def test_ask_prints_the_unsupported_sentences_and_json_has_the_check(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP, TRUE + " It also retries forever."), policy="flag")
    lines = _trace.check_lines(out)
    assert lines[0] == (
        "Answer check (scripted): 0 of 1 claims supported by the sources (score 0.00)"
    )
    assert lines[1:] == [
        "  not supported: The client retries failed requests 9 times. — 9 times is in no "
        "cited source (judge: not supported, 0.00)"
    ]
    assert json.loads(json.dumps(json_view(out), default=str))["answer_check"]["score"] == 0.0
    last = _trace.trace_lines(out)[-1]
    assert last.split(". ", 1)[1].startswith("check_answer [scripted, flag] score 0.00, flagged")


def test_the_check_runs_for_the_cli(docs: Path) -> None:
    from kbgraph.cli import main

    result = CliRunner().invoke(
        main,
        ["ask", str(docs), QUESTION, "--embedding", "fake", "--chat-model", f"fake:{MADE_UP}",
         "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["answer_check"]
    assert check["judge"] == "offline" and check["claims"][0]["citations"] == [1]


def test_check_answer_for_your_own_agent(docs: Path) -> None:
    citations = [
        {"n": 1, "chunk_id": "c1", "source": "retry.md", "text": DOCS["retry.md"]},
        {"n": 2, "chunk_id": "c2", "source": "cache/größe.md", "text": DOCS["cache/größe.md"]},
    ]
    check = check_answer(f"{TRUE} {MADE_UP}", citations, question=QUESTION, judge=_judge())
    assert [c["supported"] for c in check["claims"]] == [True, False]
    assert check["claims"][0]["evidence"] == "c1"
    # 9 is in no source: that claim counts 0 and the answer is scaled under the cap (issue 41).
    graded_true = check["claims"][0]["score"]
    assert check["score"] == pytest.approx(UNSTATED_CAP * graded_true / 2)
    assert check.get("supported_share") == 0.5


def test_an_answer_without_claims_has_no_score(docs: Path) -> None:
    check = check_answer("I don't know.", [], judge=_judge())
    assert check["score"] is None and check["claims"] == []
    assert "no claims" in check["reason"]


def test_a_made_up_number_names_its_source_sentence_and_cause() -> None:
    # The offline judge's reason reaches answer_check with the sentence it was aligned with.
    citations = [{"n": 1, "chunk_id": "c1", "source": "retry.md", "text": DOCS["retry.md"]}]
    check = check_answer(MADE_UP, citations, judge=OfflineJudge(FakeEmbeddings()))
    (claim,) = check["claims"]
    # The judge contradicts it and the facts layer finds 9 stated nowhere: the cause is the
    # one every made-up number has (issue 41), the reason keeps the judge's words.
    assert claim["verdict"] == "contradicted" and claim["cause"] == "unstated_fact"
    assert claim["reason"].startswith("9 times is in no cited source; judge: contradicted")
    assert "number mismatch: 9 time ≠ 4 time" in claim["reason"]
    assert "retries failed requests 4 times" in claim["source"]
