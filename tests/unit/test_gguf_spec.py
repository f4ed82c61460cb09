"""The ``gguf:<path>[?options]`` spec: options, checks that fail before any work, and its
resolution to one shared ``ChatGGUF`` (no model is loaded here: loading waits for a call)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kbgraph.graphs.chat_models as chat_models
from kbgraph.agents._ask import ask
from kbgraph.errors import ConfigError
from kbgraph.graphs.chat_models import ChatGGUF, GGUFOptions, parse_gguf_spec
from kbgraph.graphs.models import resolve_chat_model


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    # A file with the GGUF magic is all the spec checks; nothing here loads it.
    path = tmp_path / "mödel ünïcode.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def test_chat_models_exports() -> None:
    assert chat_models.__all__ == [
        "ChatGGUF",
        "GGUFOptions",
        "ScriptedChatModel",
        "check_runtime_installed",
        "parse_gguf_spec",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"threads": 1, "n_ctx": 4096, "max_tokens": 512}),
        ("?threads=2", {"threads": 2, "n_ctx": 4096, "max_tokens": 512}),
        ("?n_ctx=1024&max_tokens=64", {"threads": 1, "n_ctx": 1024, "max_tokens": 64}),
        ("?max_tokens=8&threads=3&n_ctx=16", {"threads": 3, "n_ctx": 16, "max_tokens": 8}),
    ],
)
def test_options_ride_on_the_spec(gguf_file: Path, query: str, expected: dict[str, int]) -> None:
    options = parse_gguf_spec(f"{gguf_file}{query}")
    assert options == GGUFOptions(str(gguf_file), **expected)
    assert options.max_input_tokens == expected["n_ctx"] - expected["max_tokens"]


def test_a_relative_or_home_path_is_made_absolute(
    gguf_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(gguf_file.parent))
    assert parse_gguf_spec(f"~/{gguf_file.name}").path == str(gguf_file)
    monkeypatch.chdir(gguf_file.parent)
    assert parse_gguf_spec(gguf_file.name).path == str(gguf_file)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?thread=2", "unknown gguf option 'thread'; allowed: threads, n_ctx, max_tokens"),
        ("?threads=two", "threads='two': it must be a whole number"),
        ("?threads=0", "threads=0: it must be a whole number >= 1"),
        ("?n_ctx=512&max_tokens=512", "max_tokens=512 leaves no room for the prompt"),
        ("?threads", "are not key=value pairs joined by '&'"),
    ],
)
def test_bad_options_say_what_is_allowed(gguf_file: Path, query: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("?", r"\?").replace("(", r"\(")):
        parse_gguf_spec(f"{gguf_file}{query}")


def test_a_missing_file_or_another_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        parse_gguf_spec(str(tmp_path / "nope.gguf"))
    other = tmp_path / "weights.bin"
    other.write_bytes(b"PK\x03\x04 not a gguf\r\n")
    with pytest.raises(ConfigError, match="is not a GGUF file"):
        parse_gguf_spec(str(other))
    with pytest.raises(ConfigError, match="cannot be read"):
        parse_gguf_spec(str(tmp_path))
    with pytest.raises(ConfigError, match="names no file"):
        parse_gguf_spec("?threads=2")


def test_the_spec_resolves_to_one_shared_model(gguf_file: Path) -> None:
    spec = f"gguf:{gguf_file}?threads=2&max_tokens=64"
    model = resolve_chat_model(spec, timeout=30.0)
    assert isinstance(model, ChatGGUF)
    assert (model.threads, model.n_ctx, model.max_tokens, model.timeout) == (2, 4096, 64, 30.0)
    assert model.temperature == 0.0
    assert model.profile is not None and model.profile["max_input_tokens"] == 4096 - 64
    assert resolve_chat_model(f"  GGUF:{gguf_file}?threads=2&max_tokens=64", timeout=30.0) is model
    assert model.model_name == gguf_file.name


def test_without_the_runtime_the_spec_says_what_to_install(
    gguf_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "xllamacpp" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigError, match=r"pip install 'kbgraph\[gguf\]'"):
        resolve_chat_model(f"gguf:{gguf_file}?n_ctx=999")
    # Built directly, the model reports it the pydantic way (a ValidationError, a ValueError).
    with pytest.raises(ValueError, match=r"pip install 'kbgraph\[gguf\]'"):
        ChatGGUF(model_path=str(gguf_file))


def test_ask_refuses_a_bad_gguf_spec_before_any_work(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        ask, [str(tmp_path), "question?", "--chat-model", f"gguf:{tmp_path / 'x.gguf'}"]
    )
    assert result.exit_code == 2
    assert "x.gguf does not exist" in result.output
