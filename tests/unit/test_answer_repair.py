"""Junk is never the answer (issue 30): under the default policy ``repair`` a chat model's
answer that loops, was cut off, cites nothing while sources exist or scores below the
check's threshold is written once more with the reasons, then replaced by the extractive
answer saying why, the model's attempts kept in ``answer_check`` and in the trace. A
correct answer from a capable model is never touched. Scripted models and judges."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from kbgraph._base.loops import repetition
from kbgraph.agents import _trace, build_chat_agent, build_tool_agent
from kbgraph.agents._problems import answer_problems
from kbgraph.agents._repair import repair_draft
from kbgraph.graphs._settings import AnswerCheckSettings, RagSettings
from kbgraph.graphs._tool import TOOL_NAME
from kbgraph.testing import ScriptedChatModel, ScriptedJudge, tool_call_message

DOCS = {
    "retry.md": "# Retry policy\n\nThe client retries failed requests 4 times with exponential "
    "backoff.\nSet `max_attempts` in `client.toml` to change the number of retries.\n\n"
    "```toml\n[retry]\nmax_attempts = 4\n```\n",
    "session.md": "# Sessions\n\nA permanent session lasts 31 days.\n",
}
QUESTION = "How many times does the client retry a failed request?"
TRUE = "The client retries failed requests 4 times [1]."
LOOP = "The client retries failed requests 4 times [1]. " * 43
UNCITED = "The client retries failed requests 4 times."
MADE_UP = "The client retries failed requests 9 times [1]."
MADE_UP_LOOP = (MADE_UP + " ") * 43
GOOD_ANSWERS = [
    TRUE,
    "The client retries failed requests 4 times with exponential backoff [1]. "
    "Set `max_attempts` in `client.toml` to change the number of retries [1].",
    "It retries 4 times [1]:\n\n```toml\n[retry]\nmax_attempts = 4\n```\n\n"
    "Change `max_attempts` in `client.toml` for more or fewer [1].",
    "- The client retries failed requests 4 times [1].\n"
    "- The retries use exponential backoff [1].\n"
    "- Set `max_attempts` in `client.toml` to change the number of retries [1].",
]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for rel, text in DOCS.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _judge() -> ScriptedJudge:
    """A capable judge of these sources: a claim with a number they do not hold is not
    supported, any other claim is."""
    return ScriptedJudge(
        rules=[lambda claim, _: "not_supported" if re.search(r"\b(9|30)\b", claim) else None],
        default="supported",
    )


def _model(*answers: Any) -> ScriptedChatModel:
    # The subgraph's nodes fall back to their heuristics on replies that are no JSON; the
    # answers are then the answer node's reply and the one regeneration.
    return ScriptedChatModel(responses=[ValueError("no JSON")] * 8 + list(answers))


def _ask(docs: Path, model: ScriptedChatModel, **check: Any) -> dict[str, Any]:
    agent = build_chat_agent(chat_model=model, answer_judge=_judge())
    context = RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}],
        embedding="fake",
        answer_check=check,  # type: ignore[arg-type]
    )
    return dict(agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=context))


def _replies(out: dict[str, Any]) -> list[AIMessage]:
    return [m for m in out["messages"] if isinstance(m, AIMessage)]


def test_repair_is_the_default_policy() -> None:
    assert AnswerCheckSettings().policy == "repair"


@pytest.mark.parametrize("good", GOOD_ANSWERS)
def test_a_correct_answer_is_never_replaced(docs: Path, good: str) -> None:
    model = _model(good)
    out = _ask(docs, model)
    assert out["answer"] == good and out["answer_mode"] == "llm"
    assert out["answer_check"]["action"] == "none"
    assert "attempts" not in out["answer_check"]
    assert model.remaining == 0  # no second answer was asked for
    assert [m.text for m in _replies(out)] == [good]


def test_a_looping_answer_keeps_its_sentence_said_once_without_asking_again(
    docs: Path,
) -> None:
    model = _model(LOOP, "never asked")
    out = _ask(docs, model)
    assert out["answer"] == TRUE and out["answer_mode"] == "llm"
    check = out["answer_check"]
    assert check["action"] == "repaired"
    first, kept = check["attempts"]
    assert first["text"] == LOOP and kept == {"text": TRUE, "score": 1.0, "problems": []}
    assert first["problems"] == ['it repeats "the client retries failed requests 4 times" 43 times']
    assert len(check["dropped"]) == 42 and {d["why"] for d in check["dropped"]} == {"said again"}
    assert model.remaining == 1  # the draft's own sentence, not a second answer
    assert [m.text for m in _replies(out)] == [TRUE]  # the loop's message is gone


def test_an_answer_is_written_again_when_nothing_of_it_is_supported(docs: Path) -> None:
    model = _model(MADE_UP_LOOP, TRUE)
    out = _ask(docs, model)
    assert out["answer"] == TRUE and out["answer_check"]["action"] == "regenerated"
    asked = model.calls[-1].messages[-1].text
    assert "Your answer cannot be shown" in asked and "43 times" in asked
    assert out["answer_check"]["dropped"][0]["why"].startswith("not supported")


def test_a_cut_off_draft_keeps_its_right_first_sentence(docs: Path) -> None:
    # SmolLM2 with max_tokens=128: the first sentence right, then a loop cut off. The
    # extractive answer that replaced it lacked the fact.
    cut = AIMessage(TRUE + " The client retries failed requests and then the client retries",
                    response_metadata={"finish_reason": "length"})  # fmt: skip
    model = _model(cut, "never asked")
    out = _ask(docs, model)
    assert out["answer"] == TRUE and out["answer_mode"] == "llm"
    assert out["answer_check"]["dropped"] == [
        {"text": "The client retries failed requests and then the client retries",
         "why": "unfinished (cut off)"}
    ]  # fmt: skip
    assert model.remaining == 1


def test_junk_twice_falls_back_to_the_extractive_answer_saying_why(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP_LOOP, MADE_UP))
    assert out["answer_mode"] == "fallback"
    assert out["answer_check"]["action"] == "replaced"
    header = out["answer"].splitlines()[0]
    assert header.startswith("Extractive answer (the chat model's answer was not shown: it ")
    assert "43 times" in header and "scored it 0.00" in header
    assert [a["text"] for a in out["answer_check"]["attempts"]] == [MADE_UP_LOOP, MADE_UP]
    assert [m.text for m in _replies(out)] == [out["answer"]]
    assert out["answer_citations"]  # the quotes cite their sources
    # --trace keeps what the model wrote; every line bounded.
    trace = _trace.trace_lines(out)
    assert any("answer 1 not shown (it repeats" in line for line in trace)
    assert any("answer 2 not shown (the answer check scored" in line for line in trace)
    assert all(len(line) <= _trace.MAX_LINE_CHARS + 8 for line in trace)
    assert "  the answer was replaced by quotes of the sources (it repeats" in "\n".join(
        _trace.check_lines(out)
    )


def test_an_answer_cut_off_at_the_token_limit_is_not_shown(docs: Path) -> None:
    cut = AIMessage("The client retries failed requests 4 times [1] and then", response_metadata={
        "finish_reason": "length"})  # fmt: skip
    out = _ask(docs, _model(cut, cut))
    assert out["answer_mode"] == "fallback"
    assert out["answer_check"]["attempts"][0]["problems"] == [
        "it was cut off at the chat model's token limit"
    ]


def test_an_answer_citing_nothing_gets_the_number_of_its_supporting_source(
    docs: Path,
) -> None:
    model = _model(UNCITED, "never asked")
    out = _ask(docs, model)
    assert out["answer"] == TRUE and out["answer_check"]["action"] == "repaired"
    (problem,) = out["answer_check"]["attempts"][0]["problems"]
    assert problem.startswith("it cites none of the ") and problem.endswith(" sources")
    assert out["answer_citations"][0]["source"] == "retry.md" and model.remaining == 1
    assert out["answer_check"]["added_citations"] == [1]


def test_the_trace_says_repair_added_a_citation_and_describes_the_draft_as_written(
    docs: Path,
) -> None:
    # The trace said "the draft was shown without what its sources do not support (it
    # cites none of the 5 sources)" beside an answer that cites [1] and drops nothing.
    out = _ask(docs, _model(UNCITED, "never asked"))
    (line,) = [x for x in _trace.check_lines(out) if x.startswith("  the draft was shown")]
    (problem,) = out["answer_check"]["attempts"][0]["problems"]
    assert problem.startswith("it cites none of the ")
    (attempt,) = _trace.attempt_lines(out["answer_check"])
    assert attempt.startswith(f"answer 1 not shown as written ({problem}): ")
    assert line == (
        "  the draft was shown with [1] added where it cited no supporting source; "
        f"as written, {problem}"
    )


def test_an_answer_below_the_threshold_is_not_shown(docs: Path) -> None:
    out = _ask(docs, _model(MADE_UP, MADE_UP))
    assert out["answer_mode"] == "fallback"
    assert out["answer_check"]["attempts"][1]["problems"][0] == (
        "the answer check scored it 0.00, below 0.50"
    )
    assert "The client retries failed requests 4 times" in out["answer"]


def test_flag_stays_an_option_and_shows_the_answer(docs: Path) -> None:
    model = _model(LOOP)
    out = _ask(docs, model, policy="flag")
    assert out["answer"] == LOOP and out["answer_check"]["policy"] == "flag"
    assert model.remaining == 0


def test_the_tool_agent_repairs_its_final_answer(docs: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            tool_call_message(TOOL_NAME, {"query": "retry failed requests"}),
            MADE_UP_LOOP,
            MADE_UP,
        ]
    )
    agent = build_tool_agent(chat_model=model, answer_judge=_judge())
    context = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(docs)}],
                          embedding="fake")  # fmt: skip
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=context)
    assert out["answer_mode"] == "fallback"
    assert out["answer"].startswith("Extractive answer (the chat model's answer was not shown")
    assert _replies(dict(out))[-1].text == out["answer"]


def test_repeated_unsupported_claims_are_listed_once_with_a_count() -> None:
    claim = {"text": "The lifetime is 30 seconds.", "supported": False, "verdict": "not_supported"}
    state = {"answer_check": {"judge": "offline", "score": 0.0, "claims": [claim] * 43,
                              "action": "flagged", "threshold": 0.5}}  # fmt: skip
    assert _trace.check_lines(state)[1:] == [
        "  not supported (43 times): The lifetime is 30 seconds."
    ]


def test_repetition() -> None:
    assert repetition(LOOP) is not None
    assert repetition("Yes [1]. Yes [2]. Yes [3].") is None  # too short to be a sentence
    run = "the permanent session lifetime is thirty seconds long " * 3
    assert repetition(run) == (
        'it repeats "the permanent session lifetime is thirty seconds long" 3 times'
    )
    for good in GOOD_ANSWERS:
        assert repetition(good) is None
    assert answer_problems(TRUE, message=None, sources=2, cited=1, score=None, threshold=0.5) == []


def test_the_extractive_header_says_why_briefly_and_cuts_at_a_word() -> None:
    # Both attempts' problems spelled out made a ~400-character header cut mid-word.
    from kbgraph.agents._check import MAX_WHY_CHARS, _why

    looping = "it repeats 'The retry policy is configurable in the settings file' 7 times"
    problems = [looping, "it was cut off at the chat model's token limit", "it cites none"]
    attempt = {"text": "x", "score": None, "problems": problems}
    same = _why([attempt, dict(attempt)])  # type: ignore[list-item]
    assert len(same) <= MAX_WHY_CHARS and same.endswith(" …")
    full = "the chat model's answer was not shown: " + "; ".join(problems)
    kept = same.removesuffix(" …")
    assert full.startswith(kept) and full[len(kept)] in " ;"  # a whole word
    other = {"text": "y", "score": None, "problems": ["it cites none"]}
    short = _why([{"text": "x", "score": None, "problems": ["it loops"]}, other])  # type: ignore[list-item]
    assert short == "the chat model's answer was not shown: it loops; again: it cites none"


def test_a_wrong_citation_or_an_unstated_fact_makes_repair_act() -> None:
    # Issue 42 hole 5: scored 0.68, above 0.5, and only flagged.
    claims = [
        {"text": "It retries 4 times.", "supported": True, "cause": "supported"},
        {"text": "It waits 999 times.", "supported": False, "cause": "unstated_fact",
         "reason": "999 times is in no cited source"},
    ]  # fmt: skip
    problems = answer_problems(
        TRUE, message=None, sources=2, cited=1, score=0.68, threshold=0.5, claims=claims
    )
    assert problems == ['"It waits 999 times.": 999 times is in no cited source']
    claims[1]["cause"] = "wrong_citation"
    assert answer_problems(
        TRUE, message=None, sources=2, cited=1, score=0.68, threshold=0.5, claims=claims
    )


def test_a_wrongly_cited_sentence_is_cited_by_the_source_that_supports_it() -> None:
    check: Any = {"claims": [{
        "text": "A permanent session lasts 31 days.", "supported": False,
        "cause": "wrong_citation", "reason": "wrong citation", "evidence": None,
    }]}  # fmt: skip
    citations = [
        {"n": 1, "chunk_id": "a", "text": DOCS["retry.md"]},
        {"n": 2, "chunk_id": "b", "text": DOCS["session.md"]},
    ]
    kept = repair_draft("A permanent session lasts 31 days [1].", check, citations, cut=False)
    assert kept.text == "A permanent session lasts 31 days [2]." and kept.dropped == []


def test_a_marker_on_the_next_line_counts_as_written_not_added() -> None:
    # The first version read a sentence's markers back as "\n[1" and raised ValueError:
    # a sentence keeps the markers after its full stop, across a line end.
    check: Any = {"claims": [
        {"text": "The client retries failed requests 4 times.", "supported": True,
         "cause": "supported", "evidence": "a"},
        {"text": "It waits between attempts.", "supported": True, "cause": "supported",
         "evidence": "a"},
    ]}  # fmt: skip
    citations = [{"n": 1, "chunk_id": "a", "text": DOCS["retry.md"]}]
    draft = "The client retries failed requests 4 times.\n[1] It waits between attempts."
    kept = repair_draft(draft, check, citations, cut=False)
    assert (
        kept.text
        == "The client retries failed requests 4 times.\n[1] It waits between attempts [1]."
    )
    assert kept.cited == [1]


def test_a_kept_answer_never_ends_on_a_sentence_announcing_what_was_dropped() -> None:
    # SmolLM2 on Flask's docs: "... use the ``--debug`` option [1]. Here's how to do it:"
    # and then a loop; the loop went, the answer shown ended on the dangling colon.
    check: Any = {"claims": [
        {"text": "Set max_attempts to change the number of retries.", "supported": True,
         "cause": "supported", "evidence": "a"},
        {"text": "Here's how to do it:", "supported": True, "cause": "supported",
         "evidence": "a"},
        {"text": "Set it to 9.", "supported": False, "cause": "unstated_fact",
         "reason": "9 is in no cited source"},
    ]}  # fmt: skip
    citations = [{"n": 1, "chunk_id": "a", "text": DOCS["retry.md"]}]
    draft = (
        "Set max_attempts to change the number of retries [1]. Here's how to do it:\n\nSet it to 9."
    )
    kept = repair_draft(draft, check, citations, cut=False)
    assert kept.text == "Set max_attempts to change the number of retries [1]."
    assert [d["why"] for d in kept.dropped] == [
        "not supported: 9 is in no cited source",
        "announces what was dropped",
    ]
    whole = "It retries 4 times [1]:"  # announces a list that never came: nothing is kept
    assert repair_draft(whole, check, citations, cut=False).text == ""


def test_a_repeat_of_a_dropped_sentence_is_dropped_for_the_same_reason() -> None:
    # SmolLM2 on examples/docs: "You can do this by running the following command:" twice,
    # and nothing after it; the trace said the second copy was "said again" although the
    # answer shown holds neither copy.
    announce = "You can do this by running the following command:"
    check: Any = {"claims": [
        {"text": "Set max_attempts to change the number of retries.", "supported": True,
         "cause": "supported", "evidence": "a"},
        {"text": announce, "supported": True, "cause": "supported", "evidence": "a"},
        {"text": "Set it to 9.", "supported": False, "cause": "unstated_fact",
         "reason": "9 is in no cited source"},
    ]}  # fmt: skip
    citations = [{"n": 1, "chunk_id": "a", "text": DOCS["retry.md"]}]
    draft = (
        f"Set max_attempts to change the number of retries [1].\n{announce}\n{announce}\n"
        "Set it to 9.\nSet it to 9.\nSet max_attempts to change the number of retries [1]."
    )
    kept = repair_draft(draft, check, citations, cut=False)
    assert kept.text == "Set max_attempts to change the number of retries [1]."
    assert sorted((d["why"], d["text"]) for d in kept.dropped) == [
        ("announces what was dropped", announce),
        ("announces what was dropped", announce),
        ("not supported: 9 is in no cited source", "Set it to 9."),
        ("not supported: 9 is in no cited source", "Set it to 9."),
        ("said again", "Set max_attempts to change the number of retries [1]."),
    ]


def test_the_trace_says_what_repair_dropped_and_why(docs: Path) -> None:
    out = _ask(docs, _model(LOOP, "never asked"))
    lines = _trace.check_lines(out)
    assert any(line.startswith("  the draft was shown without what its sources") for line in lines)
    assert f"  dropped (said again, 42 times): {TRUE}" in lines


class _InProcess(ScriptedChatModel):
    """A scripted model that says it computes in this process, as a ``gguf:`` model does."""

    runs_in_process: ClassVar[bool] = True


@pytest.mark.parametrize(("rewrite", "asked"), [(None, False), (True, True)])
def test_a_model_in_this_process_is_not_asked_to_write_it_again_unless_told(
    docs: Path, rewrite: bool | None, asked: bool
) -> None:
    # SmolLM2 on a busy 2-core machine: the second answer took ~15 CPU-s and was the one
    # shown in none of 12 questions; the person waited for it every time.
    model = _InProcess(responses=[ValueError("no JSON")] * 8 + [MADE_UP_LOOP, TRUE])
    agent = build_chat_agent(chat_model=model, answer_judge=_judge())
    context = RagSettings(
        knowledge_bases=[{"name": "docs", "folder": str(docs)}],
        embedding="fake",
        grounding_model=True,  # the scripted replies above count on its call
        answer_check={"rewrite": rewrite},  # type: ignore[arg-type]
    )
    out = dict(agent.invoke({"messages": [HumanMessage(QUESTION)]}, context=context))
    assert model.remaining == (0 if asked else 1)
    if asked:
        assert out["answer"] == TRUE and out["answer_check"]["action"] == "regenerated"
    else:
        assert out["answer_mode"] == "fallback" and len(out["answer_check"]["attempts"]) == 1
        assert out["answer"].startswith("Extractive answer (the chat model's answer was not")
