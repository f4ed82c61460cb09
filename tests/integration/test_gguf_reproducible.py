"""At temperature 0 the same messages give ChatGGUF the same reply, whatever it was asked
before. llama.cpp's prompt cache broke that: a prefix kept from the previous request (here
the shared system prompt) is computed in other batches than a fresh prompt, and SmolLM2's
reply to the first question changed when it was asked again after the others."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from kbgraph.graphs._chat_models import ChatGGUF
from tests.support.gguf import smollm2_path

pytestmark = pytest.mark.integration

QUESTIONS = (
    "How do I configure the retry policy?",
    "What is the default timeout?",
    "How do I use HTTP/2 with the client?",
)


def test_a_question_asked_again_gets_the_same_reply() -> None:
    # A window of its own (n_ctx): a runtime no other test has sent prompts to.
    model = ChatGGUF(model_path=str(smollm2_path()), n_ctx=1536, max_tokens=60)
    system = SystemMessage("You answer questions about the harbor documentation. " * 12)

    def ask(question: str) -> str:
        return str(model.invoke([system, HumanMessage(question)]).content)

    first = [ask(q) for q in QUESTIONS]
    again = [ask(q) for q in reversed(QUESTIONS)][::-1]
    assert first == again
