"""The inspector over HTTP, in process: every page's JSON twin, the pages themselves, and
what it refuses (paths out of the knowledge base, files the index does not hold, other
Host names, a restore without the token). The same app in a real browser:
tests/e2e/test_inspector_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from kbgraph.inspector import InspectorConfig, create_app
from tests.support.inspector import (
    QUESTION,
    RETRY_LINES,
    make_eval_report,
    make_kb,
    record_runs,
)

BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("inspector")
    folder = make_kb(root / "docs", outside=root / "passwd")
    runs = record_runs(root / "runs", folder)
    evals = make_eval_report(root / "evals" / "first-run")
    config = InspectorConfig.from_folders(
        [folder], runs=root / "runs", evals=[root / "evals"], embedding="fake"
    )
    return {"folder": folder, "runs": runs, "evals": evals, "config": config}


@pytest.fixture(scope="module")
def client(world: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(world["config"]), base_url=BASE) as test_client:
        yield test_client


def test_search_json_twin_shows_every_list_and_the_fate_of_each_result(
    client: TestClient,
) -> None:
    data = client.get("/api/search", params={"q": QUESTION, "top_k": 2}).json()
    names = [c["name"] for c in data["lists"]]
    assert names == ["q0:vector", "q0:bm25", "q1:vector", "q1:bm25"]
    assert data["lists"][0]["query"] == QUESTION
    first = data["results"][0]
    assert first["source"] == "retry.md" and first["fate"]["status"] == "context"
    assert set(first["ranks"]) <= set(names) and first["ranks"]
    k = data["settings"]["rrf_k"]
    for name, rank in first["ranks"].items():
        assert first["contributions"][name] == pytest.approx(1.0 / (k + rank))
    assert first["rrf"] == pytest.approx(sum(first["contributions"].values()))
    below = [r for r in data["results"] if r["position"] > 2 and r["fate"]["status"] == "top_k"]
    assert below, "results past top-k say so"
    assert data["grounding"]["grounded"] is True
    assert data["steps"][0]["node"] == "decide_retrieve"


def test_search_filters_become_the_scope_before_ranking(client: TestClient) -> None:
    question = "When do access tokens expire?"
    data = client.get("/api/search", params={"q": question, "path": "auth/**"}).json()
    assert data["scope"]["paths"] == ["auth/**"] and data["attempts"] == 1
    assert {r["source"] for r in data["results"]} == {"auth/tokens.md"}
    # The lab's scope replaces DecideRetrieve and SelectScope.
    assert [s["node"] for s in data["steps"]][:2] == ["rewrite_query", "retrieve"]


def test_why_not_this_file_names_the_stage_that_left_it_out(client: TestClient) -> None:
    data = client.get("/api/search", params={"q": QUESTION, "why": "auth/tokens.md"}).json()
    why = data["why"]
    assert why["path"] == "auth/tokens.md" and why["kb"] == "docs"
    assert {item["list"] for item in why["lists"]} == {c["name"] for c in data["lists"]}
    assert why["stage"] in {"top_k", "budget", "fusion", "lists", "context"}
    secret = client.get("/api/search", params={"q": QUESTION, "why": ".env"}).json()["why"]
    assert secret["stage"] == "index" and "secret" in secret["verdict"]
    question = "When do access tokens expire?"
    narrowed = client.get(
        "/api/search", params={"q": question, "path": "auth/**", "why": "retry.md"}
    ).json()["why"]
    assert narrowed["stage"] == "scope"


@pytest.mark.parametrize(
    ("params", "message"),
    [({"q": "x", "top_k": "0"}, "top_k must be"), ({"q": "x", "mode": "dense"}, "mode"),
     ({"q": "x", "kind": "video"}, "kind"), ({}, "?q=")],
)  # fmt: skip
def test_search_refuses_bad_parameters(
    client: TestClient, params: dict[str, str], message: str
) -> None:
    response = client.get("/api/search", params=params)
    assert response.status_code == 400 and message in response.json()["detail"]


def test_source_json_twin_numbers_lines_as_the_index_does(client: TestClient) -> None:
    data = client.get("/api/source/docs/retry.md", params={"lines": "3-4"}).json()
    assert data["lines"][RETRY_LINES[0] - 1].startswith("The client retries")  # CRLF gone
    assert data["highlight"] == [3, 4] and data["unit"] == "lines"
    umlauts = client.get("/api/source/docs/über/straße.md").json()
    assert umlauts["lines"][0] == "# Straßenverzeichnis"
    html = client.get("/api/source/docs/glossary.html", params={"lines": "5"}).json()
    assert html["lines"][4] == "<p><b>Backoff</b>: the wait between two attempts.</p>"
    pdf = client.get("/api/source/docs/guide.pdf", params={"page": "2"}).json()
    assert pdf["page"] == 2 and pdf["pages"] == [1, 2]
    assert "webhook secret rotates" in " ".join(pdf["lines"])


@pytest.mark.parametrize(
    "path",
    [
        "/source/docs/..%2F..%2F..%2Fetc%2Fpasswd",
        "/source/docs/../../etc/passwd",
        "/source/docs/%2Fetc%2Fpasswd",
        "/source/docs/leak.md",  # a link out of the folder
        "/source/docs/.env",  # inside the folder, never indexed
        "/source/docs/.kbgraph/CURRENT",
        "/api/source/docs/..%2Fpasswd",
    ],
)
def test_paths_out_of_the_index_are_refused(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code in (403, 404), response.text[:200]
    assert "root:x" not in response.text and "do-not-serve" not in response.text


def test_a_link_inside_the_folder_is_read_from_its_target(tmp_path: Path) -> None:
    from kbgraph.inspector._sources import RefusedPath, open_inside, read_inside

    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "retry.md").write_bytes(b"retries\r\n")
    (folder / "sub" / "again.md").symlink_to(folder / "retry.md")
    (folder / "sub" / "up").symlink_to(folder)
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    (folder / "out.md").symlink_to(tmp_path / "secret.txt")
    (folder / "outdir").symlink_to(tmp_path)
    assert read_inside(folder, "sub/again.md") == b"retries\r\n"
    assert read_inside(folder, "sub/up/retry.md") == b"retries\r\n"
    for rel in ("out.md", "outdir/secret.txt", "sub/../out.md", "/etc/passwd", "sub\\x"):
        with pytest.raises(RefusedPath):
            open_inside(folder, rel)


def test_index_json_twin(client: TestClient) -> None:
    data = client.get("/api/index/docs").json()
    files = {f["path"]: f for f in data["files"]}
    assert {"retry.md", "glossary.html", "guide.pdf", "über/straße.md"} <= set(files)
    assert all(f["chunks"] >= 1 for f in files.values())
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert reasons[".env"] == "secret" and reasons["leak.md"] == "symlink-outside"
    assert data["stats"]["embedding"]["provider"] == "fake"
    assert data["changes"] == {"added": [], "modified": [], "deleted": [], "rebuild": False}
    assert data["versions"][0]["current"] is True
    assert client.get("/api/index").json()["knowledge_bases"][0]["name"] == "docs"


def test_runs_json_twins(world: dict[str, Any], client: TestClient) -> None:
    listed = client.get("/api/runs").json()["runs"]
    assert {r["id"] for r in listed} == set(world["runs"])
    real, crafted = world["runs"]
    run = client.get(f"/api/runs/{real}").json()
    nodes = [item["node"] for item in run["timeline"]]
    assert nodes[0] == "decide_retrieve" and nodes[-1] == "answer"
    assert run["question"] == QUESTION and run["citations"]
    extra = client.get(f"/api/runs/{crafted}").json()
    assert extra["timeline"][0]["overrulings"][0]["decision"] == "retrieve"
    assert extra["timeline"][-1]["node"] == "answer_check"
    assert extra["answer_check"]["claims"][1]["supported"] is False
    assert client.get("/api/runs/../../etc").status_code == 404
    assert client.get("/api/runs/not-a-run").status_code == 400


def test_thread_runs_need_the_server(client: TestClient) -> None:
    response = client.get("/api/runs/thread/0b3c2f0e-0000-4000-8000-000000000000")
    assert response.status_code == 400 and "langgraph dev" in response.json()["detail"]


def test_eval_json_twins(client: TestClient) -> None:
    reports = client.get("/api/evals").json()["reports"]
    assert [r["slug"] for r in reports] == ["first-run"] and reports[0]["rows"] == 2
    report = client.get("/api/evals/first-run").json()
    faith = next(m for m in report["metrics"] if m["name"] == "faithfulness")
    assert faith["histogram"][5] == 1 and faith["histogram"][9] == 1 and faith["n_scored"] == 2
    # Only what the run measured: it had no reference answers to score correctness by.
    assert [m["name"] for m in report["metrics"]] == [
        "faithfulness", "context_recall", "context_precision", "answer_relevance",
        "gold_source_recall",
    ]  # fmt: skip
    row = client.get("/api/evals/first-run/rows/retry-1").json()
    assert [c["verdict"] for c in row["claims"]] == ["supported", "contradicted"]
    assert [g["recalled"] for g in row["gold_sources"]] == [True, False]
    assert [c["gold"] for c in row["citations"]] == [True, False]
    assert client.get("/api/evals/first-run/rows/nope").status_code == 400
    assert client.get("/api/evals/nope").status_code == 400


@pytest.mark.parametrize(
    "path",
    ["/search", f"/search?q={QUESTION}&why=auth/tokens.md", "/source/docs/retry.md?lines=3-4",
     "/index", "/index/docs", "/runs", "/evals", "/evals/first-run",
     "/evals/first-run/rows/retry-1"],
)  # fmt: skip
def test_pages_render_without_inline_script_or_style(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    html = response.text
    assert html.startswith("<!doctype html>") and 'lang="en"' in html
    assert "<script>" not in html and " style=" not in html and "<style" not in html
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"


def test_run_pages_show_overrulings_and_the_answer_check(
    world: dict[str, Any], client: TestClient
) -> None:
    html = client.get(f"/runs/{world['runs'][1]}").text
    assert "Overrulings" in html and "a lexical probe found" in html
    assert "Answer check" in html and "The default is 7 retries." in html
    assert re.search(r'href="/source/docs/retry.md\?lines=\d+-\d+#L\d+"', html)


def test_other_host_names_are_refused(client: TestClient) -> None:
    response = client.get("/index", headers={"host": "evil.example:8765"})
    assert response.status_code == 421
    assert client.get("/index", headers={"host": "localhost:8765"}).status_code == 200
    assert client.get("/index", headers={"host": "[::1]:8765"}).status_code == 200


def test_what_another_sites_page_asks_for_is_refused(client: TestClient) -> None:
    # The issue 42 matrix: an <img> on another site pointing at /api/search with costly
    # path globs ran the search (30 s of CPU); the page cannot read the reply, the work ran.
    # Browsers say where a request comes from (Fetch Metadata); a client that is no browser
    # page sends nothing and is answered.
    cross = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}
    response = client.get("/api/search?q=retry&mode=bm25", headers=cross)
    assert response.status_code == 403
    assert "Sec-Fetch-Site: cross-site" in response.text
    assert response.headers["x-frame-options"] == "DENY"
    navigation = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    assert client.get("/index", headers=navigation).status_code == 403
    for site in ("same-origin", "none"):
        headers = {"sec-fetch-site": site}
        assert client.get("/api/search?q=retry&mode=bm25", headers=headers).status_code == 200
    assert client.get("/api/search?q=retry&mode=bm25").status_code == 200


def test_an_index_kept_elsewhere_is_inspected_with_index_dir(tmp_path: Path) -> None:
    # `kbgraph index docs --index-dir X` and then `kbgraph inspect docs` found no index.
    index_dir = tmp_path / "elsewhere"
    folder = make_kb(tmp_path / "docs", index_dir=index_dir)
    config = InspectorConfig.from_folders([folder], embedding="fake", index_dirs=[index_dir])
    with TestClient(create_app(config), base_url=BASE) as client:
        data = client.get("/api/search", params={"q": "retry", "mode": "bm25"}).json()
    assert data["results"], data
    assert not (folder / ".kbgraph").exists()


def test_restore_needs_a_confirmation_a_post_and_the_token(
    world: dict[str, Any], client: TestClient
) -> None:
    from kbgraph.retrieval import KnowledgeBase

    folder: Path = world["folder"]
    (folder / "new.md").write_text("# New\n\nA page added later.\n", encoding="utf-8")
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()
        old = kb.versions()[1].name
    page = client.get(f"/index/docs/restore?generation={old}")
    token = re.search(r'name="token" value="([^"]+)"', page.text)
    assert page.status_code == 200 and token and f'value="{old}"' in page.text
    form = {"generation": old}
    assert client.post("/index/docs/restore", data=form).status_code == 403
    assert client.post("/index/docs/restore", data={**form, "token": "guess"}).status_code == 403
    assert client.post("/api/index/docs/restore", json=form).status_code == 403
    done = client.post("/index/docs/restore", data={**form, "token": token[1]},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"].endswith(f"restored={old}")
    versions = client.get("/api/index/docs").json()["versions"]
    assert [v["generation"] for v in versions if v["current"]] == [old]
    again = client.post("/api/index/docs/restore", json={"generation": old},
                        headers={"x-kbgraph-token": token[1]})  # fmt: skip
    assert again.status_code == 200 and again.json()["generation"] == old
    (folder / "new.md").unlink()
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()


def test_assets_are_served_by_the_app_itself(client: TestClient) -> None:
    css = client.get("/assets/inspector.css")
    assert css.status_code == 200 and "prefers-color-scheme: dark" in css.text
    assert client.get("/assets/../app.py").status_code == 404
    page = client.get("/index").text
    assert not re.search(r'(src|href)="https?://', page), "nothing is loaded from elsewhere"
