"""The inspector's pure parts: HTML built from escaped text, the lab's figures from a final
state, timelines of states with and without the keys issue 20 adds, score histograms,
Host names, and langgraph.json's app (the context check and the inspector together)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.routing import Mount
from starlette.testclient import TestClient

from kbgraph._base.hosts import host_name
from kbgraph.errors import ConfigError, GlobLimitError
from kbgraph.graphs import RagSettings
from kbgraph.graphs._http_app import ContextKeysMiddleware
from kbgraph.inspector._evals import histogram
from kbgraph.inspector._evals_view import histogram_svg
from kbgraph.inspector._html import el, page, url
from kbgraph.inspector._lab import LabQuery, fate_of, list_columns, result_rows
from kbgraph.inspector._runs import render_run, run_view, timeline
from kbgraph.inspector._sources import RefusedPath, check_relative, parse_lines


def test_text_and_attributes_are_escaped() -> None:
    html = el("p", "<script>alert(1)</script> & Größe", title='"><img src=x>', hidden=True)
    assert html == (
        '<p title="&quot;&gt;&lt;img src=x&gt;" hidden>'
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Größe</p>"
    )
    assert el("p", el("b", "x")) == "<p><b>x</b></p>"  # built markup is kept
    assert el("input", value="a", checked=False) == '<input value="a">'


def test_urls_quote_paths_and_repeat_list_values() -> None:
    assert url("/kbgraph/inspect", "/source/docs/über straße.md", lines="3-4") == (
        "/kbgraph/inspect/source/docs/%C3%BCber%20stra%C3%9Fe.md?lines=3-4"
    )
    assert url("", "/search", kb=["a", "b"], q="", why=None) == "/search?kb=a&kb=b"


def test_the_layout_marks_the_current_page_and_has_a_skip_link() -> None:
    html = page("Index", el("p", "x"), base="/m", active="index")
    assert '<a href="/m/index" aria-current="page">Index</a>' in html
    assert 'href="#main"' in html and '<main id="main"' in html
    assert '<script src="/m/assets/inspector.js" defer></script>' in html


@pytest.mark.parametrize("rel", ["", "/etc/passwd", "a/../b", "./a", "a//b", "a\\b", "a\0b"])
def test_paths_must_be_relative_and_normalised(rel: str) -> None:
    with pytest.raises(RefusedPath):
        check_relative(rel)


@pytest.mark.parametrize(
    ("value", "span"),
    [("3-9", (3, 9)), ("7", (7, 7)), ("9-3", (9, 9)), ("0-2", (None, None)), ("x", (None, None)),
     (None, (None, None))],
)  # fmt: skip
def test_line_spans(value: str | None, span: tuple[int | None, int | None]) -> None:
    assert parse_lines(value) == span


def test_lab_queries_are_checked() -> None:
    query = LabQuery.from_params(
        {"q": ["retries"], "kind": ["markdown"], "path": ["docs/**, src/"], "top_k": ["3"]}
    )
    assert query.paths == ("docs/**", "src/") and query.kinds == ("markdown",)
    with pytest.raises(ConfigError, match="top_k"):
        LabQuery.from_params({"top_k": ["99"]})
    # issue 42 hole 3: a glob that backtracked for seconds is refused before any search
    with pytest.raises(ConfigError, match="a glob may have at most"):
        LabQuery.from_params({"q": ["x"], "path": ["**?**?**?**?**?**?**Z" * 3]})
    # issue 42 hole 3 leftover: 20 globs within a glob's limits took 26 s; 500 were taken
    for many in (["**e" * 31 + "**Z"] * 20, ["zz*"] * 500):
        with pytest.raises(GlobLimitError, match="a search filter"):
            LabQuery.from_params({"q": ["x"], "path": many})


def _candidate(cid: str, ranks: dict[str, int], score: float) -> dict[str, Any]:
    scores = {"rrf": 0.0, **{n: 1.0 for n in ranks}, "fused": 0.5}
    return {"chunk_id": cid, "kb": "docs", "source": f"{cid}.md", "line_start": 1, "line_end": 2,
            "text": cid, "section": None, "page": None, "score": score, "ranks": ranks,
            "scores": scores}  # fmt: skip


STATE: dict[str, Any] = {
    "rag_should_retrieve": True,
    "rag_candidates": [
        _candidate("b", {"q0:bm25": 2, "q1:bm25": 1}, 0.9),
        _candidate("a", {"q0:vector": 1}, 0.8),
        _candidate("c", {"q0:bm25": 3}, 0.7),
    ],
    "rag_retrieval_debug": {
        "steps": [
            {"node": "decide_retrieve", "attempt": 0, "data": {}},
            {"node": "retrieve", "attempt": 0, "data": {"ranks": {"x": {}}}},  # attempt 0
            {"node": "retrieve", "attempt": 1, "data": {
                "queries": ["why", "why retry"],
                "weights": {"q0:vector": 2.0, "q0:bm25": 1.0, "q1:bm25": 1.0},
                "lists": [
                    {"kb": "docs", "query": 0, "ranker": "vector", "name": "q0:vector",
                     "results": 5, "ms": 1.0},
                    {"kb": "docs", "query": 0, "ranker": "bm25", "name": "q0:bm25",
                     "results": 5, "ms": 1.0},
                    {"kb": "docs", "query": 1, "ranker": "bm25", "name": "q1:bm25",
                     "results": 4, "ms": 1.0},
                ],
                "ranks": {"a": {}, "b": {}, "c": {}}}},
            {"node": "build_context", "attempt": 1, "data": {
                "sources": [["b"]], "dropped_for_budget": ["a"], "budget": 50}},
        ],
    },
}  # fmt: skip


def test_result_rows_come_from_the_last_attempt() -> None:
    settings = RagSettings(search={"top_k": 2})
    rows = result_rows(STATE, settings)
    assert [(r["chunk_id"], r["fused_rank"], r["move"]) for r in rows] == [
        ("b", 2, 1),
        ("a", 1, -1),
        ("c", 3, 0),
    ]
    assert [r["fate"]["status"] for r in rows] == ["context", "budget", "top_k"]
    assert rows[1]["contributions"] == {"q0:vector": pytest.approx(2.0 / 61)}
    assert [c["name"] for c in list_columns(STATE)] == ["q0:vector", "q0:bm25", "q1:bm25"]
    assert list_columns(STATE)[2]["query"] == "why retry"


def test_a_score_under_the_threshold_is_said_so() -> None:
    settings = RagSettings(search={"score_threshold": 0.75})
    fate = fate_of("z", 0.5, 1, {}, settings)
    assert fate["status"] == "threshold" and "0.75" in fate["text"]


def test_timelines_show_overrulings_and_the_answer_check_when_present() -> None:
    state = {
        "rag_retrieval_debug": {
            "steps": [{"node": "decide_retrieve", "attempt": 0, "path": "llm", "ms": 3.0,
                       "data": {"decision": "retrieve", "reason": "docs may answer"}}],
            "fallbacks": [{"node": "decide_retrieve", "attempt": 0, "stage": "json",
                           "error": "bad json"}],
            "overrulings": [{"node": "decide_retrieve", "attempt": 0, "proposal": "skip",
                             "evidence": "probe hit", "decision": "retrieve"}],
        },
        "answer": "Five [1].",
        "answer_mode": "llm",
        "answer_citations": [{"n": 1, "marker": "[1]", "start": 5, "end": 8}],
        "rag_citations": [{"n": 1, "chunk_id": "c1", "source": "a.md", "kb": "docs",
                           "line_start": 1, "line_end": 2, "text": "five", "score": 0.9}],
        "answer_check": {"score": 1.0, "judge": "offline",
                         "claims": [{"text": "Five.", "supported": True, "citations": [1],
                                     "evidence": "c1"}]},
    }  # fmt: skip
    items = timeline(state)
    assert [i["node"] for i in items] == ["decide_retrieve", "answer", "answer_check"]
    assert items[0]["summary"] == "retrieve: docs may answer"
    assert items[0]["overrulings"][0]["evidence"] == "probe hit"
    assert items[0]["fallbacks"][0]["error"] == "bad json"
    assert items[2]["summary"] == "score 1.00: 1 of 1 claims supported"
    html = render_run(run_view({"id": "r", "state": state}), lambda c: "/source/docs/a.md")
    assert 'Five <a href="#cite-1">[1]</a>.' in html
    assert '<a href="#cite-1">[1] c1</a>' in html and "probe hit" in html


def test_a_state_without_the_new_keys_still_shows() -> None:
    items = timeline({"rag_retrieval_debug": {"steps": []}, "answer": "x"})
    assert [i["node"] for i in items] == ["answer"]


def test_histograms_use_ten_bins_over_zero_to_one() -> None:
    assert histogram([0.0, 0.05, 0.1, 0.5, 0.99, 1.0]) == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    svg = histogram_svg("faithfulness", [1, 0, 3], 0.5)
    assert svg.count('class="bar"') == 3 and 'role="img"' in svg
    assert "<title>0.7–1.0: 3 rows</title>" in svg


@pytest.mark.parametrize(
    ("host", "name"),
    [("127.0.0.1:8765", "127.0.0.1"), ("[::1]:80", "::1"), ("LOCALHOST", "localhost"),
     ("::1", "::1")],
)  # fmt: skip
def test_host_names(host: str, name: str) -> None:
    assert host_name(host) == name


def test_langgraph_json_app_keeps_the_context_check_and_mounts_the_inspector(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbgraph.graphs._internal import ServedRequestsGuard
    from kbgraph.inspector import _http_app as http_app

    # the Host/Origin/folder guard first (issue 42 hole 2), then the context check
    assert [m.cls for m in http_app.app.user_middleware] == [
        ServedRequestsGuard,
        ContextKeysMiddleware,
    ]
    mount = http_app.app.routes[0]
    assert isinstance(mount, Mount) and mount.path == http_app.MOUNT == "/kbgraph/inspect"
    monkeypatch.setenv("KBGRAPH_INSPECT_FOLDERS", str(tmp_path))
    with TestClient(http_app.app, base_url="http://127.0.0.1:2024") as client:
        page = client.get("/kbgraph/inspect/index")
        assert page.status_code == 200
        assert 'href="/kbgraph/inspect/search"' in page.text and "no index yet" in page.text


def test_a_word_documents_lines_are_its_paragraphs(tmp_path: Any) -> None:
    from kbgraph.inspector._sources import source_text
    from tests.unit.test_docx import BODY, make_docx

    (tmp_path / "guide.docx").write_bytes(make_docx())
    text = source_text("kb", tmp_path, "guide.docx", {"guide.docx": None}, None)
    assert text.unit == "paragraphs" and text.first_line == 1
    assert text.lines[: len(BODY)] == [line for _, line in BODY]
    with pytest.raises(RefusedPath, match="not a file of the index"):
        source_text("kb", tmp_path, "guide.docx", {}, None)


def test_a_pdf_is_shown_a_page_at_a_time(tmp_path: Any) -> None:
    from kbgraph.inspector._sources import source_text
    from tests.unit.test_loaders import make_pdf

    (tmp_path / "a.pdf").write_bytes(make_pdf([["one"], [], ["three", "lines"]]))
    first = source_text("kb", tmp_path, "a.pdf", {"a.pdf": None}, None)
    assert first.page == 1 and first.pages == (1, 3) and first.lines[0] == "one"
    third = source_text("kb", tmp_path, "a.pdf", {"a.pdf": None}, 3)
    assert third.page == 3 and third.lines[:2] == ["three", "lines"]


def test_a_lab_without_knowledge_bases_says_how_to_give_some(tmp_path: Any) -> None:
    from kbgraph.inspector import InspectorConfig
    from kbgraph.inspector._lab import lab_settings

    with pytest.raises(ConfigError, match="KBGRAPH_INSPECT_FOLDERS"):
        lab_settings(InspectorConfig((), runs_dir=tmp_path), LabQuery(text="q"))
