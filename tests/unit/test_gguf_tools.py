"""``ChatGGUF`` tool calling and structured output without a model: the tools' reply
schema and prompt, how a conversation with tool calls is written for a chat template, how a
reply is read (streamed, cut, repeated), and the requests sent. A scripted runtime stands
in for llama.cpp (``tests.support.gguf.ScriptedRuntime``); the real model runs the same
paths in ``tests/integration/test_gguf_tools.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from kbgraph.graphs._chat_models._gguf_messages import prompt_messages, with_system
from kbgraph.graphs._chat_models._gguf_reply import ReplyReader, parse_reply, response_so_far
from kbgraph.graphs._chat_models._gguf_tools import (
    ToolPlan,
    openai_tool_choice,
    reply_schema,
    tool_functions,
    tool_plan,
    tools_prompt,
)
from tests.support.gguf import ScriptedRuntime

pytest.importorskip("xllamacpp")  # ChatGGUF checks that its runtime is installed

from kbgraph.graphs._chat_models import ChatGGUF


@tool
def get_weather(location: str) -> str:
    """Get the weather at a location."""
    return "It's sunny."


@tool
def no_args() -> int:
    """Return five."""
    return 5


class Point(BaseModel):
    """A point."""

    x: int
    y: int


class Route(BaseModel):
    """A route through points."""

    start: Point
    stops: list[Point] = Field(default_factory=list)


WEATHER_CALL = '{"tool_call": {"name": "get_weather", "arguments": {"location": "Zürich"}}}'


# -- tools, tool_choice, the reply schema and the prompt --------------------------------


def test_every_langchain_tool_form_becomes_a_function() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    class Lookup(TypedDict):
        """Look a word up."""

        word: str

    raw = {"type": "function", "function": {"name": "raw", "parameters": {"type": "object"}}}
    functions = tool_functions([get_weather, Point, add, Lookup, raw])
    assert [f["name"] for f in functions] == ["get_weather", "Point", "add", "Lookup", "raw"]
    assert functions[0]["parameters"]["required"] == ["location"]


def test_a_provider_builtin_tool_is_refused() -> None:
    with pytest.raises(ValueError, match="function tools only"):
        tool_functions([{"type": "web_search_preview"}])


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, "auto"), (False, "auto"), ("auto", "auto"), ("none", "none"),
        ("any", "required"), ("required", "required"), (True, "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
        ({"type": "function", "function": {"name": "no_args"}},
         {"type": "function", "function": {"name": "no_args"}}),
        ({"type": "tool", "name": "no_args"},
         {"type": "function", "function": {"name": "no_args"}}),
        ({"type": "any"}, "required"),
    ],
)  # fmt: skip
def test_tool_choice_has_langchains_meanings(choice: Any, expected: Any) -> None:
    assert openai_tool_choice(choice, ["get_weather", "no_args"]) == expected


@pytest.mark.parametrize("choice", ["magic", {"type": "function", "function": {"name": "x"}}, 3])
def test_a_tool_choice_naming_no_bound_tool_is_an_error(choice: Any) -> None:
    with pytest.raises(ValueError, match="names no bound tool; allowed: 'auto'"):
        openai_tool_choice(choice, ["get_weather"])


def _plan(choice: Any = None, **kwargs: Any) -> ToolPlan:
    return tool_plan(tool_functions([get_weather, no_args]), choice, **kwargs)


def test_auto_replies_call_a_bound_tool_or_respond() -> None:
    schema = reply_schema(_plan())
    call, response = schema["anyOf"]
    assert response["properties"] == {"response": {"type": "string"}}
    options = call["properties"]["tool_call"]["anyOf"]
    assert [o["properties"]["name"] for o in options] == [
        {"const": "get_weather"},
        {"const": "no_args"},
    ]
    # A tool without arguments is called with {} and nothing made up.
    assert options[1]["properties"]["arguments"]["additionalProperties"] is False


def test_forced_tools_parallel_calls_and_a_response_schema() -> None:
    forced = reply_schema(_plan("no_args"))
    assert forced["properties"]["tool_call"]["properties"]["name"] == {"const": "no_args"}
    required = reply_schema(_plan("any", parallel=True))
    assert required["properties"]["tool_calls"]["minItems"] == 1
    answer = reply_schema(_plan(response_schema=Point.model_json_schema()))
    assert answer["anyOf"][1]["properties"]["response"]["title"] == "Point"
    assert reply_schema(_plan("any"), calls=False)["properties"].keys() == {"response"}


def test_definitions_of_each_part_are_moved_to_the_top_and_still_resolve() -> None:
    plan = tool_plan(tool_functions([Route]), "auto", response_schema=Route.model_json_schema())
    schema = reply_schema(plan)
    refs = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            refs.update(v for k, v in node.items() if k == "$ref")
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in schema.items() if k != "$defs"})
    assert refs and {r.removeprefix("#/$defs/") for r in refs} <= set(schema["$defs"])
    assert "response.Point" in schema["$defs"]


def test_the_prompt_describes_the_allowed_tools_and_the_reply_shapes() -> None:
    auto = tools_prompt(_plan())
    assert '"name": "get_weather"' in auto and '"name": "no_args"' in auto
    assert '{"tool_call":' in auto and '{"response":' in auto
    forced = tools_prompt(_plan("get_weather"))
    assert "no_args" not in forced and '{"response":' not in forced
    assert "Call the tool get_weather now." in forced
    assert '{"tool_calls": [' in tools_prompt(_plan(parallel=True))


# -- conversations with tool calls, written for a chat template --------------------------


def test_tool_calls_and_results_become_text_turns() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("Be brief."),
        HumanMessage("Wetter in Zürich?\r\nUnd in Genf?"),
        AIMessage(
            "Ich schaue nach.",
            tool_calls=[
                {"name": "get_weather", "args": {"location": "Zürich"}, "id": "a"},
                {"name": "get_weather", "args": {"location": "Genève"}, "id": "b"},
            ],
        ),
        ToolMessage("Sonnig ☀", tool_call_id="a"),
        ToolMessage("Regen", tool_call_id="b", status="error", name="get_weather"),
        AIMessage("Sonnig in Zürich."),
    ]
    out = prompt_messages(messages)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant"]
    assert out[1]["content"] == "Wetter in Zürich?\r\nUnd in Genf?"
    assert out[2]["content"] == (
        "Ich schaue nach.\n"
        'I call get_weather with {"location": "Zürich"}.\n'
        'I call get_weather with {"location": "Genève"}.'
    )
    assert out[3]["content"] == "get_weather returned:\nSonnig ☀\n\nget_weather failed:\nRegen"
    assert all("tool_calls" not in m for m in out)


def test_provider_blocks_of_a_tool_call_are_not_repeated() -> None:
    call = {"name": "get_weather", "args": {"location": "Oslo"}, "id": "t1"}
    blocks: list[Any] = [
        {"type": "text", "text": "some text"},
        {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"location": "Oslo"}},
    ]
    result = ToolMessage("{}", tool_call_id="t1")
    out = prompt_messages([AIMessage(blocks, tool_calls=[call]), result])
    assert out[0]["content"] == 'some text\nI call get_weather with {"location": "Oslo"}.'
    assert out[1]["content"] == "get_weather returned:\n{}"


def test_the_tools_prompt_joins_the_first_system_message_or_leads() -> None:
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": ""}]
    assert with_system(chat, "TOOLS")[0]["content"] == "Be brief.\n\nTOOLS"
    assert with_system(chat[1:], "TOOLS") == [{"role": "system", "content": "TOOLS"}, chat[1]]
    assert with_system([], "TOOLS") == [{"role": "system", "content": "TOOLS"}]


# -- reading a reply -------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(text=st.text(), piece=st.integers(min_value=1, max_value=7), ascii_only=st.booleans())
def test_a_response_streams_exactly_its_text(text: str, piece: int, ascii_only: bool) -> None:
    raw = json.dumps({"response": text}, ensure_ascii=ascii_only)
    reader = ReplyReader(_plan())
    streamed = "".join(reader.feed(raw[i : i + piece]) for i in range(0, len(raw), piece))
    reply = reader.finish()
    assert reply.complete and reply.content == text
    assert text.startswith(streamed) and streamed == reader.streamed


def test_calls_are_given_out_whole_with_ids() -> None:
    reply = parse_reply(WEATHER_CALL)
    assert reply.complete and reply.content == ""
    (call,) = reply.calls
    assert (call.name, json.loads(call.args)) == ("get_weather", {"location": "Zürich"})
    assert call.id.startswith("call_")
    two = '{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]}'
    parallel = parse_reply(two)
    assert [c.name for c in parallel.calls] == ["a", "b"]
    assert parallel.calls[0].id != parallel.calls[1].id


def test_a_cut_reply_keeps_what_it_has() -> None:
    assert response_so_far('{"response": "Ha\\u00') == "Ha"
    assert response_so_far('{"response": "x\\ud83d') == "x"  # half a surrogate pair
    assert response_so_far('{"tool_call": {') is None
    cut = parse_reply('{"response": "It is sun')
    assert not cut.complete and cut.content == "It is sun"
    call = parse_reply(WEATHER_CALL[:-12])
    assert not call.complete and call.calls[0].name == "get_weather"
    assert parse_reply("").content == "" and not parse_reply("").calls
    assert parse_reply('{"response": {"x": 1, "y"').content == '{"x": 1, "y"'


# -- ChatGGUF with a scripted runtime -----------------------------------------------------


@pytest.fixture
def model(tmp_path: Path) -> ChatGGUF:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 16)
    return ChatGGUF(model_path=str(path), n_ctx=512, max_tokens=32)


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ScriptedRuntime]]:
    runtimes: list[ScriptedRuntime] = []
    monkeypatch.setattr(ChatGGUF, "runtime", lambda self: runtimes[0])
    yield runtimes


def _aggregate(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    return whole


def test_a_call_is_one_chunk_and_the_same_by_invoke_and_stream(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    script.append(ScriptedRuntime(WEATHER_CALL, WEATHER_CALL))
    bound = model.bind_tools([get_weather], tool_choice="any")
    called = bound.invoke("Wetter in Zürich?")
    chunks = list(bound.stream("Wetter in Zürich?"))
    streamed = _aggregate(chunks)
    assert len(chunks) == 1 and chunks[0].chunk_position == "last"
    for message in (called, streamed):
        (call,) = message.tool_calls
        assert call["name"] == "get_weather" and call["args"] == {"location": "Zürich"}
        assert call["id"] and message.text == ""
    assert chunks[0].tool_call_chunks[0]["index"] == 0
    request = script[0].requests[0]
    assert request["response_format"]["json_schema"]["schema"]["properties"].keys() == {"tool_call"}
    assert '"name": "get_weather"' in request["messages"][0]["content"]


def test_a_response_streams_token_by_token(model: ChatGGUF, script: list[ScriptedRuntime]) -> None:
    script.append(ScriptedRuntime('{"response": "Es ist sonnig in Zürich."}'))
    chunks = list(model.bind_tools([get_weather]).stream("Wetter?"))
    assert len([c for c in chunks if c.text]) > 3
    whole = _aggregate(chunks)
    assert whole.text == "Es ist sonnig in Zürich." and not whole.tool_calls
    assert whole.usage_metadata is not None and whole.response_metadata["finish_reason"] == "stop"


def test_a_cut_call_is_tried_again_then_invalid_never_run(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    cut = (WEATHER_CALL[:-15], "length")
    script.append(ScriptedRuntime(cut, cut, cut, cut))
    bound = model.bind_tools([get_weather])
    called = bound.invoke("Wetter?")
    assert called.tool_calls == []
    (invalid,) = called.invalid_tool_calls
    assert invalid["name"] == "get_weather" and "max_tokens=32" in str(invalid["error"])
    first, again = script[0].requests
    assert "repeat_penalty" not in first and again["repeat_penalty"] == 1.1
    assert called.response_metadata["cut_reply_retried"] == {"repeat_penalty": 1.1}
    streamed = _aggregate(list(bound.stream("Wetter?")))
    assert streamed.tool_calls == [] and streamed.response_metadata["finish_reason"] == "length"
    # A reply that had to be a call is a cut call even when cut before naming the tool;
    # a caller's own repeat_penalty is not overridden (nothing is tried again).
    script[0].replies.append(('{"tool', "length"))
    forced = model.bind_tools([get_weather], tool_choice="any", repeat_penalty=1.0)
    assert [c["name"] for c in forced.invoke("Wetter?").invalid_tool_calls] == ["get_weather"]


def test_a_call_looping_to_max_tokens_is_made_again_with_a_repetition_penalty(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    loop = '{"tool_call": {"name": "get_weather", "arguments": {"location": "a/a/a/a/a/a'
    script.append(ScriptedRuntime((loop, "length"), WEATHER_CALL))
    called = model.bind_tools([get_weather]).invoke("Wetter in Zürich?")
    assert called.tool_calls[0]["args"] == {"location": "Zürich"}
    assert called.invalid_tool_calls == [] and called.usage_metadata is not None
    assert called.usage_metadata["input_tokens"] == 20  # both generations counted
    # A reply to the user under a schema (create_agent's response_format) likewise.
    answer = '{"response": {"x": 1, "y": 2}}'
    script[0].replies += [(answer[:-9], "length"), (answer, "stop")]
    point = {
        "type": "json_schema",
        "json_schema": {"name": "Point", "schema": Point.model_json_schema()},
    }
    reply = model.bind_tools([get_weather], response_format=point).invoke("Punkt?")
    assert json.loads(reply.text) == {"x": 1, "y": 2}
    assert script[0].requests[-1]["repeat_penalty"] == 1.1


def test_a_call_answered_since_the_question_is_not_repeated(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    call = {"name": "get_weather", "args": {"location": "Zürich"}, "id": "c1"}
    history: list[BaseMessage] = [
        HumanMessage("Wetter in Zürich?"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("Sonnig", tool_call_id="c1"),
    ]
    script.append(ScriptedRuntime(WEATHER_CALL, '{"response": "Sonnig."}'))
    reply = model.bind_tools([get_weather]).invoke(history)
    assert reply.text == "Sonnig." and reply.tool_calls == []
    assert reply.response_metadata["repeated_tool_calls"] == ["get_weather"]
    first, second = script[0].requests
    assert second["messages"] == first["messages"]  # the same prompt, its cache reused
    assert second["response_format"]["json_schema"]["schema"]["properties"].keys() == {"response"}
    assert reply.usage_metadata is not None and reply.usage_metadata["input_tokens"] == 20
    # A new question may ask for the same call again; so may a caller who forces tools.
    script[0].replies += [(WEATHER_CALL, "stop")] * 2
    again = [*history, AIMessage("Sonnig."), HumanMessage("Und jetzt?")]
    assert model.bind_tools([get_weather]).invoke(again).tool_calls
    assert model.bind_tools([get_weather], tool_choice="any").invoke(history).tool_calls


def test_tool_choice_none_sends_neither_the_tools_nor_a_schema(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    script.append(ScriptedRuntime("Hallo!"))
    reply = model.bind_tools([get_weather], tool_choice="none").invoke("Hallo")
    assert reply.text == "Hallo!"
    request = script[0].requests[0]
    assert "response_format" not in request and request["messages"] == [
        {"role": "user", "content": "Hallo"}
    ]


def test_binding_an_unknown_tool_choice_fails_at_once(model: ChatGGUF) -> None:
    with pytest.raises(ValueError, match="names no bound tool"):
        model.bind_tools([get_weather], tool_choice="magic")


def test_token_counts_with_tools_include_their_description(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    script.append(ScriptedRuntime())
    plain = model.get_num_tokens_from_messages([HumanMessage("")])
    with_tools = model.get_num_tokens_from_messages([HumanMessage("")], tools=[get_weather])
    assert with_tools > plain
    assert "get_weather" in script[0].counted[1][0]["content"]


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_structured_output_by_each_method(
    model: ChatGGUF, script: list[ScriptedRuntime], method: str
) -> None:
    reply = '{"x": 1, "y": 2}'
    if method == "function_calling":
        reply = '{"tool_call": {"name": "Point", "arguments": {"x": 1, "y": 2}}}'
    script.append(ScriptedRuntime(reply, reply))
    assert model.with_structured_output(Point, method=method).invoke("") == Point(x=1, y=2)  # type: ignore[arg-type]
    out: Any = model.with_structured_output(
        Point.model_json_schema(),
        method=method,
        include_raw=True,  # type: ignore[arg-type]
    ).invoke("")
    assert out["parsed"] == {"x": 1, "y": 2} and out["parsing_error"] is None
    sent = script[0].requests[0]["response_format"]
    assert sent["type"] == ("json_object" if method == "json_mode" else "json_schema")


def test_a_bad_structured_reply_is_reported_with_include_raw(
    model: ChatGGUF, script: list[ScriptedRuntime]
) -> None:
    script.append(ScriptedRuntime(('{"x": 1', "length")))
    out: Any = model.with_structured_output(Point, include_raw=True).invoke("")
    assert out["parsed"] is None and out["parsing_error"] is not None
    assert out["raw"].response_metadata["finish_reason"] == "length"


EMPTY: list[Any] = ["", "   ", [], [HumanMessage("")], [HumanMessage([])], [SystemMessage("")]]


@pytest.mark.parametrize("messages", EMPTY)
def test_an_empty_message_never_raises(
    model: ChatGGUF, script: list[ScriptedRuntime], messages: Any
) -> None:
    script.append(
        ScriptedRuntime(
            "", WEATHER_CALL, '{"response": ""}', "{}", '{"x": 0, "y": 0}',
            '{"tool_call": {"name": "Point", "arguments": {"x": 0, "y": 0}}}',
        )
    )  # fmt: skip
    assert model.invoke(messages).text == ""
    assert model.bind_tools([get_weather], tool_choice="any").invoke(messages).tool_calls
    assert model.bind_tools([get_weather]).invoke(messages).text == ""
    assert model.with_structured_output(Point, method="json_mode", include_raw=True).invoke(
        messages
    )["parsing_error"]  # type: ignore[index]
    assert model.with_structured_output(Point).invoke(messages) == Point(x=0, y=0)
    assert model.with_structured_output(Point, method="function_calling").invoke(messages)
