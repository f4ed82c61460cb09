"""Code chunked at definitions: Python through ``ast``, TypeScript and Go through
tree-sitter, the keyword fallback for a file no parser reads; symbol paths in ``section``;
exact bytes and lines; chunks that start at line starts."""

from __future__ import annotations

import codecs

import pytest

from kbgraph.retrieval._chunking import chunk_file, code_chunker_id
from kbgraph.retrieval._chunking._definitions import definitions
from kbgraph.retrieval._chunking._treesitter import available
from kbgraph.retrieval._config import ChunkConfig
from kbgraph.retrieval._segments import Span, decode_bytes, normalize_newlines

PYTHON = '''"""Résumé client: a module docstring."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sys

DEFAULT_TIMEOUT_CONFIG = 5.0


class Client:
    """A client."""

    retries = 3

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    # Strips the trailing slash of the base URL.
    @property
    def _redirect_url(self) -> str:
        url = self.base_url
        if url.endswith("/"):
            url = url[:-1]
        return url

    class Inner:
        class Deeper:
            def deep(self) -> int:
                return 1


@decorator(
    arg=1,
)
async def long_function(x: int) -> int:
    total = 0
    for i in range(x):
        total += i
        if total > 100:
            total -= 50
            print("lots of text to make it longer", total)
    while total > 0:
        total -= 7
        print("decrementing the total slowly", total)
    return total
'''


def spans_of(text: str, size: int, language: str | None) -> list[tuple[str | None, str]]:
    return [(s.section, text[s.start : s.end]) for s in definitions(text, size, 20, 2000, language)]


def assert_line_starts(text: str, spans: list[Span]) -> None:
    """Sorted, covering every non-whitespace character, each starting at a line start
    and ending without trailing whitespace."""
    covered = bytearray(len(text))
    for span in spans:
        piece = text[span.start : span.end]
        assert span.start == 0 or text[span.start - 1] == "\n", piece
        assert piece.strip() and piece == piece.rstrip()
        covered[span.start : span.end] = b"\1" * len(piece)
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    assert [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]] == []


def test_python_module_header_is_its_own_chunk_and_small_definitions_pack() -> None:
    chunks = spans_of(PYTHON, 400, "python")
    section, text = chunks[0]
    assert section is None
    assert text.startswith('"""Résumé') and text.endswith("    import sys")
    assert chunks[1] == (
        "DEFAULT_TIMEOUT_CONFIG",
        "DEFAULT_TIMEOUT_CONFIG = 5.0",
    )
    assert_line_starts(PYTHON, definitions(PYTHON, 400, 20, 2000, "python"))


def test_python_symbol_paths_of_methods_nested_classes_and_decorated_functions() -> None:
    chunks = spans_of(PYTHON, 120, "python")
    by_section: dict[str | None, list[str]] = {}
    for section, text in chunks:
        by_section.setdefault(section, []).append(text)
    assert by_section["Client._redirect_url"][0].startswith(
        "    # Strips the trailing slash of the base URL.\n    @property\n"
        "    def _redirect_url(self) -> str:"
    )
    assert by_section["Client.Inner"] == [
        "    class Inner:\n        class Deeper:\n            def deep(self) -> int:\n"
        "                return 1"
    ]
    assert by_section["long_function"][0].startswith("@decorator(\n    arg=1,\n)\nasync def")
    assert by_section["Client.__init__"] == [
        "    def __init__(self, base_url: str) -> None:\n        self.base_url = base_url"
    ]
    assert_line_starts(PYTHON, definitions(PYTHON, 120, 20, 2000, "python"))


def test_a_deeply_nested_definition_alone_is_named_by_its_whole_path() -> None:
    text = "class A:\n    class B:\n        def c(self):\n" + "            x = 1\n" * 12
    sections = [section for section, _ in spans_of(text, 60, "python")]
    # The first piece holds A's own line: it is A's; the others lie inside A.B.c alone.
    assert sections[0] == "A" and set(sections[1:]) == {"A.B.c"}


def test_a_long_python_definition_is_split_at_statement_boundaries() -> None:
    chunks = [t for s, t in spans_of(PYTHON, 120, "python") if s == "long_function"]
    assert len(chunks) > 2
    statement_starts = (
        "    total = 0", "    for i", "        total += i", "        if total",
        "            total -= 50", "            print", "    while", "        total -= 7",
        "        print", "    return", "@decorator",
    )  # fmt: skip
    for text in chunks:
        assert text.startswith(statement_starts), text
        assert not text.endswith(("(", ",", ":")), text  # ends where a statement ends


def test_a_split_definitions_signature_stays_with_its_body() -> None:
    # Issue 30: a long docstring left "@property" + "def debug(self)" a chunk of two lines.
    words = " ".join(f"word{i}" for i in range(90))
    text = (
        'class App:\n    """The app."""\n\n    name = "x"\n\n    @property\n'
        f'    def debug(self) -> bool:\n        """Whether debug mode is on. {words[:200]}\n'
        f'        {words[200:420]}\n        """\n        return self.config["DEBUG"]\n'
    )
    pieces = [t for s, t in spans_of(text, 300, "python") if s == "App.debug"]
    assert len(pieces) > 1
    assert pieces[0].startswith('    @property\n    def debug(self) -> bool:\n        """Whether')
    assert all(len(t.splitlines()) > 2 or "def debug" not in t for t in pieces)


@pytest.mark.parametrize(
    "broken",
    [
        "def f(:\n    return 1\n\nclass A:\n    pass\n",
        "x = 'unterminated\nclass B:\n    pass\n",
        "def g():\n\treturn 1\n        return 2\n",  # inconsistent indentation
        "\x00\x00 binary",
        "(" * 500 + ")" * 500,  # too deep for the parser
    ],
)
def test_a_python_file_that_does_not_parse_falls_back_and_never_crashes(broken: str) -> None:
    spans = definitions(broken, 60, 10, 2000, "python")
    assert spans
    covered = "".join(broken[s.start : s.end] for s in spans)
    assert set(covered.split()) >= set(broken.split()) - {""}


def test_the_fallback_names_top_level_definitions() -> None:
    broken = "def f(:\n    return 1\n\nclass A:\n    x = 1\n    y = 2\n"
    assert [s for s, _ in spans_of(broken, 30, "python")] == ["f", "A"]
    ruby = "def greet(name)\n  puts name\nend\n\nclass Greeter\n  def hi\n  end\nend\n"
    assert list(dict.fromkeys(s for s, _ in spans_of(ruby, 30, "ruby"))) == ["greet", "Greeter"]


TYPESCRIPT = """import { x } from "./x";
import y from "y";

/** A client. */
export class Client extends Base {
  private retries = 3;

  @memo
  async redirectUrl(req: Request): Promise<string> {
    const url = req.url;
    if (url.endsWith("/")) {
      return url.slice(0, -1);
    }
    return url;
  }

  close(): void {}
}

export const DEFAULT_TIMEOUT = 5000;

export function makeClient(opts: Options): Client {
  return new Client(opts);
}
"""

GO = """// Package client does HTTP.
package client

import (
\t"fmt"
)

// Do sends one request.
func (c *Client) Do(req *Request) error {
\tfmt.Println("sending", req.URL)
\tif req == nil {
\t\treturn fmt.Errorf("nil request")
\t}
\treturn nil
}

func helper() int { return 1 }
"""


@pytest.mark.skipif(not available("typescript"), reason="no TypeScript grammar installed")
def test_typescript_through_tree_sitter() -> None:
    chunks = spans_of(TYPESCRIPT, 100, "typescript")
    assert chunks[0] == (None, 'import { x } from "./x";\nimport y from "y";')
    sections = [s for s, _ in chunks]
    assert sections[1:] == [
        "Client", "Client.redirectUrl", "Client.redirectUrl", "Client.redirectUrl",
        "Client.close", "DEFAULT_TIMEOUT", "makeClient",
    ]  # fmt: skip
    assert chunks[2][1].startswith("  @memo\n  async redirectUrl(")
    assert_line_starts(TYPESCRIPT, definitions(TYPESCRIPT, 100, 20, 2000, "typescript"))


@pytest.mark.skipif(not available("go"), reason="no Go grammar installed")
def test_go_methods_are_named_after_their_receiver() -> None:
    chunks = spans_of(GO, 400, "go")
    assert chunks[0][0] is None and chunks[0][1].endswith(")")
    assert chunks[1][0] == "Client.Do, helper"
    assert [s for s, _ in spans_of(GO, 90, "go")][1:3] == ["Client.Do", "Client.Do"]


def test_chunk_file_cites_exact_bytes_and_lines_with_crlf_and_a_bom() -> None:
    raw = codecs.BOM_UTF8 + PYTHON.replace("\n", "\r\n").encode("utf-8")
    chunks = chunk_file([decode_bytes(raw)], ChunkConfig(chunk_size=120), "code", "pkg/c.py")
    lines = normalize_newlines(raw.decode("utf-8-sig")).split("\n")
    for chunk in chunks:
        assert normalize_newlines(raw[chunk.byte_start : chunk.byte_end].decode()) == chunk.text
        assert chunk.text == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
    redirect = next(c for c in chunks if c.section == "Client._redirect_url")
    assert lines[redirect.line_start - 1].startswith("    # Strips")
    assert lines[redirect.line_start + 1].startswith("    def _redirect_url(")


def test_the_code_chunker_id_names_the_version_and_the_grammars() -> None:
    chunker = code_chunker_id()
    assert chunker.startswith("code-3|python-ast|tree-sitter:")
    assert ("typescript" in chunker) == available("typescript")
