"""The documentation site as a person sees it (issue 33): built strictly, served over real
loopback HTTP, and opened in Debian's Chromium through Playwright (never a Playwright
browser download). The home page and a reference page each have a title, a navigation
and no broken asset: no failed request, no HTTP error, no console error. Screenshots go to
``build/screenshots/`` (``$KBGRAPH_SCREENSHOTS``). llms.txt links only to pages served."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_inspector_browser import CHROMIUM, FLAGS, SHOTS, VIEWPORT
from tests.support.langgraph_dev import REPO, offline_env

pytestmark = [pytest.mark.e2e, pytest.mark.browser]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as ``make docs`` builds it: strict (-W), every page read again.
    ``make test`` builds it just before pytest and names it in ``KBGRAPH_DOCS_SITE``."""
    built = os.environ.get("KBGRAPH_DOCS_SITE")
    if built and (REPO / built / "index.html").is_file():
        return REPO / built
    out = tmp_path_factory.mktemp("docs-site") / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
         str(REPO / "docs"), str(out)],
        capture_output=True, text=True, env=offline_env(PYTHONPATH=str(REPO)), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"the strict docs build failed:\n{done.stderr[-4000:]}"
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base(site: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


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


def _open(browser: Any, url: str, shot: str) -> dict[str, Any]:
    """Load ``url`` and record every failed request, HTTP error and console error."""
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    context.set_default_timeout(30_000)
    page = context.new_page()
    broken: list[str] = []
    page.on("requestfailed", lambda r: broken.append(f"failed: {r.url} ({r.failure})"))

    def on_response(response: Any) -> None:
        if response.status >= 400:
            broken.append(f"{response.status}: {response.url}")

    def on_console(message: Any) -> None:
        if message.type == "error":
            broken.append(f"console: {message.text}")

    page.on("response", on_response)
    page.on("console", on_console)
    page.on("pageerror", lambda e: broken.append(f"page error: {e}"))
    page.goto(url, wait_until="networkidle")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=False)
    seen = {
        "title": page.title(),
        "h1": page.locator("article h1").first.inner_text(),
        "nav": page.locator(".sidebar-tree a.reference").all_inner_texts(),
        "broken": broken,
    }
    context.close()
    return seen


def test_the_home_page(browser: Any, base: str) -> None:
    seen = _open(browser, base + "index.html", "docs-home")
    assert seen["broken"] == []
    assert seen["title"].startswith("kbgraph") and seen["h1"].startswith("kbgraph")
    # The navigation holds the four kinds of page.
    for title in ("Index a folder and ask, offline", "Choose BM25, vector or hybrid search",
                  "Python API", "Command line (kbgraph)", "Measured"):  # fmt: skip
        assert title in seen["nav"], (title, seen["nav"])


def test_a_reference_page_generated_from_the_code(browser: Any, base: str) -> None:
    seen = _open(browser, base + "reference/generated/cli.html", "docs-cli-reference")
    assert seen["broken"] == []
    assert seen["title"].startswith("Command line") and "kbgraph" in seen["h1"]
    assert "Exit codes" in seen["nav"]


def test_the_api_page_documents_a_public_face(browser: Any, base: str) -> None:
    seen = _open(browser, base + "reference/generated/api/retrieval.html", "docs-api-retrieval")
    assert seen["broken"] == []
    assert "kbgraph.retrieval" in seen["h1"]


def test_every_public_name_is_documented(site: Path) -> None:
    """Each name of each face's ``__all__`` has its entry in the API reference, on its own
    face or on the face it is re-exported from (``kbgraph.retrieval.ConfigError`` is
    ``kbgraph.errors.ConfigError``)."""
    import importlib
    import posixpath

    from sphinx.util.inventory import InventoryFile

    with (site / "objects.inv").open("rb") as inventory:
        loaded = InventoryFile.load(inventory, "", posixpath.join)
    documented = {name for kind, objs in loaded.items() if kind.startswith("py:") for name in objs}
    faces = ["kbgraph.errors", "kbgraph.retrieval", "kbgraph.graphs", "kbgraph.evals",
             "kbgraph.agents", "kbgraph.mcp", "kbgraph.inspector", "kbgraph.testing",
             "kbgraph"]  # fmt: skip
    missing = []
    for face in faces:
        module = importlib.import_module(face)
        for name in (n for n in module.__all__ if not n.startswith("__")):
            homes = [f for f in faces if name in importlib.import_module(f).__all__]
            if not any(f"{home}.{name}" in documented for home in homes):
                missing.append(f"{face}.{name}")
    assert missing == []


def test_llms_txt_links_only_to_pages_served(base: str, site: Path) -> None:
    text = (site / "llms.txt").read_text(encoding="utf-8")
    assert text.startswith("# kbgraph\n\n> ")
    links = re.findall(r"^- \[[^\]]+\]\(([^)]+)\)", text, re.M)
    assert len(links) >= 30 and all(link.endswith(".md") for link in links)
    with httpx.Client(base_url=base) as client:
        assert [link for link in links if client.get(link).status_code != 200] == []
