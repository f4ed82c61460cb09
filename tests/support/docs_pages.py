"""The code blocks of the documentation (README.md and every page under docs/), as the
doc tests run them: each fenced ``python``, ``bash`` or ``sh`` block with the marker on the
line before it, if any (``<!-- skip: reason -->`` or ``<!-- example: NAME -->``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {"python", "bash", "sh"}
_FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(skip|example):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    skip: str | None = None  # the reason given
    example: str | None = None  # the name a dedicated test runs it by

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and the hand-written pages (the generated reference holds no example)."""
    docs = sorted(
        p for p in (ROOT / "docs").rglob("*.md") if "generated" not in p.relative_to(ROOT).parts
    )
    return [ROOT / "README.md", *docs]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        language = match.group(2).lower()
        if language not in RUNNABLE:
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        kind, value = (marker.group(1), marker.group(2)) if marker else (None, None)
        found.append(
            Block(
                page=str(page.relative_to(ROOT)),
                line=text.count("\n", 0, match.start()) + 1,
                language="python" if language == "python" else "bash",
                code=match.group(3),
                skip=value if kind == "skip" else None,
                example=value if kind == "example" else None,
            )
        )
    return found


def examples() -> dict[str, Block]:
    """The blocks marked ``<!-- example: NAME -->``, by name, over every page."""
    named: dict[str, Block] = {}
    for page in pages():
        for block in blocks(page):
            if block.example:
                assert block.example not in named, f"example {block.example} named twice"
                named[block.example] = block
    return named
