"""A document that talks to the terminal: its text, printed by ``kbgraph search`` and
``kbgraph ask`` on a real terminal (a pseudo-terminal, so that click keeps every escape as
it would for a person), shows its control characters as escapes: no window title (OSC 0),
no hidden hyperlink (OSC 8), no cleared screen (ESC [2J, or C1 CSI). ``--json`` keeps the
text exact."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.conftest import ROOT, cli, write_docs

pytestmark = [pytest.mark.faults, pytest.mark.timeout(600)]

TITLE = "\x1b]0;pwned\x07"
LINK = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
C1_CLEAR = "\x9b2J"
HOSTILE = (
    f"# Retry policy {TITLE}\n\n"
    f"The retry policy backs off exponentially {LINK} between attempts.\n"
    f"Set max_attempts to change the retries {CLEAR} (default 5) {C1_CLEAR} and more.\n"
)
# What must never reach the terminal raw (click's own bold is ESC [1m / ESC [0m).
RAW = [b"\x1b]", b"\x07", b"\x1b[2J", b"\x1b[H", b"\xc2\x9b", b"\x1b\\"]


def on_a_terminal(*args: str, timeout: float = 240.0) -> bytes:
    """``kbgraph ARGS`` as a real process whose stdout is a terminal; what it printed."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbgraph", *args],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the process closed the terminal
                    break
                if not data:
                    break
                out += data
            elif proc.poll() is not None:
                break
        assert proc.wait(10) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return bytes(out)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = write_docs(tmp_path_factory.mktemp("escapes") / "docs", {"retry.md": HOSTILE})
    run = cli("index", str(folder), "--embedding", "fake")
    assert run.code == 0, run.stderr
    return folder


def _assert_shown_not_acted(out: bytes) -> None:
    for raw in RAW:
        assert raw not in out, (raw, out)
    text = out.decode("utf-8")
    assert "\\x1b]0;pwned\\x07" in text, text
    assert "\\x1b]8;;https://evil.example/" in text and "\\x9b2J" in text


def test_search_shows_control_characters_of_a_document_as_escapes(hostile: Path) -> None:
    out = on_a_terminal("search", str(hostile), "retry policy", "--embedding", "fake")
    assert b"retry.md:" in out
    _assert_shown_not_acted(out)


def test_search_json_keeps_the_text_exact(hostile: Path) -> None:
    run = cli("search", str(hostile), "retry policy", "--embedding", "fake", "--json")
    texts = [r["text"] for r in json.loads(run.stdout)["results"]]
    assert any(TITLE in t and LINK in t for t in texts), texts


def test_ask_shows_control_characters_of_the_answer_and_sources_as_escapes(
    hostile: Path,
) -> None:
    question = "How does the retry policy back off between attempts?"
    out = on_a_terminal("ask", str(hostile), question, "--embedding", "fake", "--trace")
    assert b"Sources:" in out
    for raw in RAW:
        assert raw not in out, (raw, out)
    assert b"\\x1b]" in out, out
    run = cli("ask", str(hostile), question, "--embedding", "fake", "--json")
    payload = json.loads(run.stdout)
    # The extractive answer quotes the best sentence (issue 30), the sources hold the rest.
    assert LINK in payload["answer"], "--json keeps the answer exact"
    assert C1_CLEAR in json.dumps(payload, ensure_ascii=False), "--json keeps the sources exact"
