"""The one rule every list variable of a served app is read by, and the one its URLs are
compared by (``kbgraph._base.allow_lists``)."""

from __future__ import annotations

import os

import pytest

from kbgraph._base.allow_lists import listed, url_key


@pytest.mark.parametrize(
    ("raw", "items"),
    [
        ("a, b ,c,,", ("a", "b", "c")),
        (
            '"postgresql://u@a,b/db", postgresql://u@c/db',
            ("postgresql://u@a,b/db", "postgresql://u@c/db"),
        ),
        ("gguf:/models/my model.gguf, fake:Hi", ("gguf:/models/my model.gguf", "fake:Hi")),
        ("one\ntwo, three", ("one", "two", "three")),
        ('"say ""hi"""', ('say "hi"',)),
        ("", ()),
    ],
)
def test_a_list_is_comma_separated_with_csv_quotes(
    monkeypatch: pytest.MonkeyPatch, raw: str, items: tuple[str, ...]
) -> None:
    monkeypatch.setenv("KBG_TEST_LIST", raw)
    assert listed("KBG_TEST_LIST") == items


def test_folder_lists_are_separated_like_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBG_TEST_LIST", os.pathsep.join(["/a, b", " /c ", ""]))
    assert listed("KBG_TEST_LIST", sep=os.pathsep) == ("/a, b", "/c")
    monkeypatch.delenv("KBG_TEST_LIST")
    assert listed("KBG_TEST_LIST", "x,y") == ("x", "y")  # the default, by the same rule


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("HTTPS://Smith.LangChain.com/", "https://smith.langchain.com"),
        ("openai_compatible:m@HTTP://Host:9/v1/", "openai_compatible:m@http://host:9/v1"),
        ("http://Host/v1/#m", "http://host/v1#m"),
        (
            "postgresql://kb:Pw@DB.example,Standby:5432/",
            "postgresql://kb:Pw@db.example,standby:5432",
        ),
    ],
)
def test_urls_match_whatever_their_scheme_and_host_case(one: str, other: str) -> None:
    assert url_key(one) == url_key(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("postgresql://KB@db/kb", "postgresql://kb@db/kb"),  # a user name is case-sensitive
        ("postgresql://db/kb/", "postgresql://db/kb"),  # "kb/" is another database name
        ("postgresql://%2Fsock%2FA/kb", "postgresql://%2fsock%2fa/kb"),  # a socket's folder
        ("openai_compatible:M@http://h/v1", "openai_compatible:m@http://h/v1"),  # the model
        ("http://h/V1", "http://h/v1"),  # a path
    ],
)
def test_anything_else_must_be_written_as_listed(one: str, other: str) -> None:
    assert url_key(one) != url_key(other)
