"""``kbgraph inspect`` in a real browser: the command runs as a user starts it (a real
process on a free loopback port), and Debian's Chromium, headless, is driven through
Playwright's Python client (the system browser, never a Playwright download). Search, click
a citation and see the highlighted lines; ask why a file is missing; open a recorded run
and an eval report; a path out of the knowledge base is refused; keyboard only; dark mode;
restore a version through its confirmation. Screenshots go to ``build/screenshots/``
(``$KBGRAPH_SCREENSHOTS``)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.inspector import QUESTION, make_eval_report, make_kb, record_runs
from tests.support.langgraph_dev import REPO, offline_env

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

CHROMIUM = Path(os.environ.get("KBGRAPH_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SHOTS = Path(os.environ.get("KBGRAPH_SCREENSHOTS", REPO / "build" / "screenshots"))
START_TIMEOUT = 60.0
VIEWPORT = {"width": 1280, "height": 860}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("inspect-browser")
    folder = make_kb(root / "docs", outside=root / "passwd")
    runs = record_runs(root / "runs", folder)
    make_eval_report(root / "evals" / "first-run")
    return {"root": root, "folder": folder, "runs": runs}


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not line or not line[0].strip():
        process.kill()
        raise AssertionError(f"kbgraph inspect printed no URL: {process.stderr.read()}")  # type: ignore[union-attr]
    return line[0].strip()


@pytest.fixture(scope="module")
def base(world: dict[str, Any]) -> Iterator[str]:
    root = world["root"]
    command = [sys.executable, "-m", "kbgraph", "inspect", str(world["folder"]), "--port", "0",
               "--eval", str(root / "evals"), "--runs", str(root / "runs"),
               "--embedding", "fake"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=offline_env()
    )
    try:
        url = _first_line(process, START_TIMEOUT)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install Debian's (apt-get install chromium; .ci/run "
            "does) or set KBGRAPH_CHROMIUM to a Chromium executable"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def shot(page: Any, name: str, full: bool = False) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full)


def _in_viewport(page: Any, selector: str) -> bool:
    return bool(page.eval_on_selector(
        selector,
        "e => { const r = e.getBoundingClientRect(); "
        "return r.top >= 0 && r.bottom <= window.innerHeight; }",
    ))  # fmt: skip


def test_search_then_click_a_citation_to_see_the_cited_lines(page: Any, base: str) -> None:
    page.goto(base + "search")
    page.get_by_label("Query").fill(QUESTION)
    page.get_by_label("Query").press("Enter")
    results = page.locator("table.results tbody tr")
    results.first.wait_for()
    assert "retry.md" in results.first.inner_text()
    assert page.locator("table.results thead th").filter(has_text="q1:bm25").count() == 1
    assert page.locator('tr[data-fate="context"]').count() >= 1
    shot(page, "search-lab")
    citation = page.locator("#cite-1 .cite-head a")
    label = citation.inner_text()
    assert label.startswith("retry.md, lines 1-4")
    citation.click()
    page.wait_for_url("**/source/docs/retry.md*")
    lit = page.locator("table.source tr.hl")
    assert lit.count() == 4
    assert "Set `max_attempts` in `client.toml`" in lit.nth(3).inner_text()
    assert _in_viewport(page, "table.source tr.hl")
    focused = page.evaluate("document.activeElement.closest('tr')?.id")
    assert focused == "L1", "the first cited line has the keyboard focus"
    shot(page, "source")


def test_why_not_this_file(page: Any, base: str) -> None:
    page.goto(base + "search")
    page.get_by_label("Query").fill(QUESTION)
    page.get_by_label("Why not this file?").fill("auth/tokens.md")
    page.get_by_role("button", name="Search").click()
    box = page.locator("#why-box")
    box.wait_for()
    assert "Why not auth/tokens.md?" in box.inner_text()
    assert box.locator("tbody tr").count() == 4, "one row per ranked list"
    shot(page, "why-not")


def test_open_a_recorded_run_as_a_timeline(page: Any, base: str, world: dict[str, Any]) -> None:
    page.goto(base + "runs")
    crafted = world["runs"][1]
    page.locator(f'a[href$="/runs/{crafted}"]').click()
    page.wait_for_url(f"**/runs/{crafted}")
    steps = page.locator("ol.timeline > li")
    names = [steps.nth(i).locator("strong").first.inner_text() for i in range(steps.count())]
    assert names[0] == "decide_retrieve" and names[-2:] == ["answer", "answer_check"]
    assert "grounding_check" in names
    assert page.get_by_role("heading", name="Overrulings").is_visible()
    check = page.locator("section.check")
    assert "The default is 7 retries." in check.inner_text()
    assert check.locator(".badge.bad").count() == 1
    shot(page, "run", full=True)


def test_open_an_eval_report_and_a_row(page: Any, base: str) -> None:
    page.goto(base + "evals")
    page.get_by_role("link", name="first-run").click()
    page.wait_for_url("**/evals/first-run")
    assert page.locator("figure.chart svg").count() == 5
    bars = page.locator("figure.chart").first.locator("rect.bar")
    assert bars.count() == 10
    header = page.locator("table.sortable th button").filter(has_text="faithfulness")
    header.focus()
    page.keyboard.press("Enter")
    first_id = page.locator("table.sortable tbody tr").first.locator("td").first.inner_text()
    assert first_id == "retry-1", "ascending faithfulness: 0.51 before 0.93"
    shot(page, "eval-report")
    page.get_by_role("link", name="retry-1").click()
    page.wait_for_url("**/rows/retry-1")
    assert page.locator(".badge", has_text="contradicted").count() == 1
    assert page.locator(".badge", has_text="missed").count() == 1
    shot(page, "eval-row", full=True)


@pytest.mark.parametrize(
    "path",
    ["source/docs/..%2F..%2F..%2Fetc%2Fpasswd", "source/docs/leak.md", "source/docs/.env",
     "api/source/docs/..%2Fpasswd"],
)  # fmt: skip
def test_a_path_out_of_the_knowledge_base_is_refused(page: Any, base: str, path: str) -> None:
    response = page.goto(base + path)
    assert response is not None and response.status in (403, 404)
    text = page.content()
    assert "root:x" not in text and "do-not-serve" not in text
    if path == "source/docs/leak.md":
        assert "not a file of the index" in text
        shot(page, "refused")


def test_keyboard_only_and_dark(browser: Any, base: str) -> None:
    context = browser.new_context(viewport=VIEWPORT, color_scheme="dark")
    try:
        page = context.new_page()
        page.goto(base + "index")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        red, green, blue = (int(v) for v in background[4:-1].split(",")[:3])
        assert red + green + blue < 150, background
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        page.locator("input[data-filter]").fill("auth")
        visible = page.locator("table.filterable tbody tr:not([hidden])")
        assert visible.count() == 1 and "auth/tokens.md" in visible.inner_text()
        page.locator("input[data-filter]").fill("")
        shot(page, "index-dark")
    finally:
        context.close()


def test_restore_a_version_through_its_confirmation(
    page: Any, base: str, world: dict[str, Any]
) -> None:
    from kbgraph.retrieval import KnowledgeBase

    folder: Path = world["folder"]
    (folder / "later.md").write_text("# Later\n\nAdded after the first index.\n", "utf-8")
    with KnowledgeBase(folder, embedding="fake") as kb:
        kb.index()
        older = next(v.name for v in kb.versions() if not v.current)
    page.goto(base + "index/docs")
    page.get_by_role("link", name=f"Restore generation {older}").click()
    page.wait_for_url("**/index/docs/restore?generation=*")
    shot(page, "restore-confirm")
    page.get_by_role("button", name="Restore").click()
    page.wait_for_url("**/index/docs?restored=*")
    assert f"Restored generation {older}." in page.locator(".notice").inner_text()
    with KnowledgeBase(folder, embedding="fake") as kb:
        assert [v.name for v in kb.versions() if v.current] == [older]
