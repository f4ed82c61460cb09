"""The README's screenshots of ``kbgraph inspect``: one per view, taken with Debian's
Chromium through Playwright from a running inspector, and quantised to small PNGs.

    kbgraph inspect DOCS --eval EVAL_DIR --port 8765 &
    python docs/inspector/screenshots.py http://127.0.0.1:8765/ RUN_ID EVAL_NAME ROW_ID
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
QUERY = "search?q=How+do+I+configure+the+retry+policy%3F&why=docs%2Fglossary.html"


def views(run_id: str, report: str, row: str) -> dict[str, tuple[str, str, str | None]]:
    """name -> (path, colour scheme, element to scroll to)."""
    return {
        "search-lab": (QUERY, "light", "h2:has-text('Results')"),
        "why-not": (QUERY, "light", "#why-box"),
        "source": ("source/docs/docs/configuration.md?lines=59-60#L59", "light", None),
        "index": ("index/docs", "dark", None),
        "run": (f"runs/{run_id}", "light", None),
        "eval-report": (f"evals/{report}", "light", None),
        "eval-row": (f"evals/{report}/rows/{row}", "dark", "h2:has-text('Answer claims')"),
    }


def main(base: str, run_id: str, report: str, row: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for name, (path, scheme, anchor) in views(run_id, report, row).items():
            page = browser.new_page(viewport={"width": 1200, "height": 760}, color_scheme=scheme)
            page.goto(base + path)
            page.wait_for_load_state("load")
            if anchor:
                page.locator(anchor).first.evaluate("e => e.scrollIntoView({block: 'start'})")
            target = HERE / f"{name}.png"
            page.screenshot(path=str(target))
            page.close()
            image = Image.open(target).convert("RGB").quantize(colors=128, dither=Image.Dither.NONE)
            image.save(target, optimize=True)
            print(f"{target.relative_to(HERE.parents[1])}: {target.stat().st_size // 1024} KB")
        browser.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])
