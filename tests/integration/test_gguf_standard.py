"""LangChain's standard chat-model suites (``langchain-tests``) against ``ChatGGUF`` on the
packaged SmolLM2-135M-Instruct, tool calling and structured output included.

The unit suite checks construction, ``bind_tools`` and ``with_structured_output`` without
generating. The integration suite generates: replies are short (``max_tokens``) and the
window small, so the module stays within a few minutes on a loaded 2-core machine.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from kbgraph.graphs._chat_models import ChatGGUF
from tests.support.gguf import smollm2_path

pytestmark = pytest.mark.integration


class _GGUFSuite:
    @property
    def chat_model_class(self) -> type[ChatGGUF]:
        return ChatGGUF

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": str(smollm2_path()), "n_ctx": 2048}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False  # one model file per instance


class TestChatGGUFStandardUnit(_GGUFSuite, ChatModelUnitTests):
    pass


class TestChatGGUFStandardIntegration(_GGUFSuite, ChatModelIntegrationTests):
    @property
    def chat_model_params(self) -> dict[str, Any]:
        # Here the suite adds no standard parameters: the reply length is ours to bound.
        return {**super().chat_model_params, "max_tokens": 100}

    @pytest.mark.xfail(
        strict=True,
        reason=(
            "SmolLM2-135M's wrong JSON, not the adapter: json_mode holds the reply to a JSON "
            "object (the keys are only in the prompt), and asked for 'setup' and 'punchline' "
            'keys it nests them, {"setup": {"punchline": "The cat was a cat, and the cat was '
            'a cat, ..."}}, until max_tokens; the json_schema and function_calling methods '
            "(held to the schema) pass test_structured_output"
        ),
    )
    def test_json_mode(self, model: BaseChatModel) -> None:
        super().test_json_mode(model)
