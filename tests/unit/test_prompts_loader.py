"""The prompt loader: files by name, ``{name}`` placeholders only, every prompt the
subgraph's nodes use renders with the values they pass."""

from __future__ import annotations

import pytest

from kbgraph.errors import ConfigError
from kbgraph.prompts import load_prompt, placeholders, render_prompt

NODE_PROMPTS = {
    "decide_retrieve": {"question", "conversation", "knowledge_bases"},
    "select_scope": {"question", "knowledge_bases", "paths", "kinds"},
    "rewrite_query": {"question", "conversation", "previous_queries", "guidance"},
    "rerank": {"question", "queries", "count", "passages"},
    "grounding_check": {"question", "context"},
}


@pytest.mark.parametrize("node", sorted(NODE_PROMPTS))
def test_node_prompts_exist_with_their_placeholders(node: str) -> None:
    assert placeholders(f"{node}_system") == frozenset()
    assert placeholders(f"{node}_user") == NODE_PROMPTS[node]
    assert load_prompt(f"{node}_system").strip()


def test_render_inserts_values_once_and_leaves_json_alone() -> None:
    text = render_prompt("json_fallback", skeleton='{"a": <string>} and {question}')
    assert '{"a": <string>} and {question}' in text  # values are never re-scanned
    assert "{skeleton}" not in text


def test_missing_value_is_an_error() -> None:
    with pytest.raises(ConfigError, match="needs values for context, question"):
        render_prompt("grounding_check_user")


@pytest.mark.parametrize("name", ["../etc/passwd", "Bad Name", "", "x/y"])
def test_bad_names(name: str) -> None:
    with pytest.raises(ConfigError):
        load_prompt(name)


def test_unknown_prompt() -> None:
    with pytest.raises(ConfigError, match="no prompt named 'nope'"):
        load_prompt("nope")
