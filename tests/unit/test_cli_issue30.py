"""Smaller CLI defects of issue 30, each a regression test that failed before its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kbgraph.cli import main

DOCS = {
    "retry.md": "# Retry policy\n\nThe client retries failed requests 4 times.\n",
    "auth.md": "# Authentication\n\nRotate an API key every 90 days.\n",
}


def _docs(root: Path) -> Path:
    for rel, text in DOCS.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_search_prints_the_score_on_the_scale_ask_uses(tmp_path: Path) -> None:
    # It printed the raw RRF score (0.0325) where ask printed 0.94 for the same chunk.
    folder = _docs(tmp_path)
    assert CliRunner().invoke(main, ["index", str(folder), "--embedding", "fake"]).exit_code == 0
    args = ["search", str(folder), "How does the client retry?", "--embedding", "fake"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    shown = r"score (\d\.\d\d) \(RRF (0\.\d{4}); 1\.00 = first in every list\)"
    first = re.search(shown, out.output)
    assert first, out.output
    raw = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)["results"][0]["score"]
    assert float(first[1]) == round(raw / (2 / 61), 2) and float(first[2]) == round(raw, 4)


def test_ctrl_c_during_index_says_nothing_was_lost(tmp_path: Path, monkeypatch: Any) -> None:
    # click printed "Aborted!" and exited 1.
    from kbgraph.retrieval import KnowledgeBase

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(KnowledgeBase, "index", interrupted)
    out = CliRunner().invoke(main, ["index", str(_docs(tmp_path)), "--embedding", "fake"])
    assert out.exit_code == 130
    assert "Aborted!" not in out.output
    assert out.stderr.startswith("kbgraph: interrupted (Ctrl-C); nothing was lost")


def test_an_empty_folder_indexes_and_searches_with_a_warning(tmp_path: Path) -> None:
    # It indexed and searched without a word: every search quietly found nothing.
    folder = tmp_path / "empty"
    folder.mkdir()
    index = CliRunner().invoke(main, ["index", str(folder), "--embedding", "fake", "--json"])
    assert index.exit_code == 0, index.output
    assert "kbgraph: warning: " in index.stderr and "holds no document" in index.stderr
    assert [w["reason"] for w in json.loads(index.stdout)["warnings"]] == ["no-documents"]
    args = ["search", str(folder), "retry", "--embedding", "fake"]
    search = CliRunner().invoke(main, [*args, "--json"])
    assert search.exit_code == 0 and "holds no document" in search.stderr
    assert [w["reason"] for w in json.loads(search.stdout)["warnings"]] == ["no-documents"]
    plain = CliRunner().invoke(main, args)
    assert plain.stdout == "No results.\n" and plain.stderr.count("holds no document") == 1
