"""A careless or hostile folder of links and leftovers: a symbolic link whose target lies
where the walk never goes (``.git/``, ``node_modules/``, a virtualenv, an index, an
excluded folder) or is a secret is skipped with its reason, never indexed nor served, and
a nested index that lost its ``CURRENT`` is still an index, not data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._config import DEFAULT_EXCLUDE, ScanConfig
from kbgraph.retrieval._scan_paths import PathRules
from tests.faults.conftest import cli, write_docs

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

TOKEN = "ghp_leakedTOKEN0123456789"
FILES = {
    "docs/readme.md": "# Readme\n\nThe retry policy backs off exponentially.\n",
    "notes/real.md": "# Real\n\nA real note about the retry budget.\n",
    ".git/config": f'[remote "origin"]\n\turl = https://bot:{TOKEN}@github.com/acme/kb\n',
    "node_modules/pkg/README.md": f"# pkg\n\nInstall token {TOKEN} for the registry.\n",
    "env/pyvenv.cfg": "home = /usr/bin\n",
    "env/lib/notes.md": f"# Env notes\n\nexport TOKEN={TOKEN}\n",
    "build/out.md": f"# Built\n\nGenerated with {TOKEN}.\n",
    ".env": f"API_TOKEN={TOKEN}\n",
}
LINKS = {
    "docs/gitcfg.md": "../.git/config",
    "docs/dep.md": "../node_modules/pkg/README.md",
    "docs/venv.md": "../env/lib/notes.md",
    "docs/built.md": "../build/out.md",
    "docs/dotenv.md": "../.env",
    "docs/index-meta.md": "../old-index/gen-0a-1b/meta.json",
    "docs/ok.md": "../notes/real.md",
}
EXPECTED = {
    "docs/gitcfg.md": ("excluded", "the link points at .git/config, in .git/"),
    "docs/dep.md": ("excluded", "the link points at node_modules/pkg/README.md, in node_modules/"),
    "docs/venv.md": ("excluded", "the link points at env/lib/notes.md, in env/: a Python"),
    "docs/built.md": ("excluded", "the link points at build/out.md, in build/"),
    "docs/dotenv.md": ("secret", "the link points at .env, a secret"),
    "docs/index-meta.md": ("excluded", "the link points at old-index/gen-0a-1b/meta.json"),
}


def _lost_current_index(folder: Path, tmp_path: Path) -> None:
    """``folder/old-index``: a real index folder (of another folder) without CURRENT."""
    other = write_docs(tmp_path / "other", {"a.md": f"# A\n\nIndexed elsewhere: {TOKEN}\n"})
    with KnowledgeBase(other, embedding="fake") as kb:
        kb.index()
    live = (other / ".kbgraph" / "CURRENT").read_text().strip()
    shutil.copytree(other / ".kbgraph" / live, folder / "old-index" / "gen-0a-1b")


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    folder = write_docs(tmp_path / "kb", FILES)  # type: ignore[arg-type]
    _lost_current_index(folder, tmp_path)
    for name, target in LINKS.items():
        os.symlink(target, folder / name)
    return folder


def test_a_link_into_an_excluded_place_or_to_a_secret_is_skipped_with_its_reason(
    linked: Path,
) -> None:
    scan = ScanConfig(exclude=(*DEFAULT_EXCLUDE, "build/"))
    with KnowledgeBase(linked, embedding="fake", scan=scan) as kb:
        report = kb.index()
        files = set(kb.indexed_files())
        hits = kb.search(TOKEN, config=None)
    skipped = {s.path: (s.reason, s.detail) for s in report.skipped}
    for name, (reason, detail) in EXPECTED.items():
        assert name in skipped, (name, sorted(skipped))
        assert skipped[name][0] == reason and skipped[name][1].startswith(detail), skipped[name]
    assert {"docs/readme.md", "docs/ok.md", "notes/real.md"} <= files
    assert not files & set(EXPECTED), "no link into an excluded place is indexed"
    assert all(TOKEN not in hit.chunk.text for hit in hits), [h.chunk.source for h in hits]


def test_the_cli_reports_the_skipped_links_and_search_finds_no_token(linked: Path) -> None:
    run = cli("index", str(linked), "--embedding", "fake", "--exclude", "build/", "--json")
    assert run.code == 0, run.stderr
    reasons = {s["path"]: s["reason"] for s in run.json()["skipped"]}
    assert reasons["docs/gitcfg.md"] == "excluded" and reasons["docs/dotenv.md"] == "secret"
    assert reasons["docs/built.md"] == "excluded"
    found = cli("search", str(linked), TOKEN, "--embedding", "fake", "--json")
    assert found.code == 0 and TOKEN not in found.stdout


def test_a_nested_index_that_lost_current_is_not_indexed_as_data(linked: Path) -> None:
    assert not (linked / "old-index" / "CURRENT").exists()
    with KnowledgeBase(linked, embedding="fake") as kb:
        report = kb.index()
        files = set(kb.indexed_files())
    skipped = {s.path: (s.reason, s.detail) for s in report.skipped}
    assert skipped["old-index/"][0] == "excluded-dir"
    assert "CURRENT is missing" in skipped["old-index/"][1]
    assert not [f for f in files if f.startswith("old-index/")], sorted(files)


def test_the_watcher_rules_agree_on_the_folders_a_link_may_not_reach(linked: Path) -> None:
    rules = PathRules(linked, ScanConfig(exclude=(*DEFAULT_EXCLUDE, "build/")))
    for rel in (".git/config", "node_modules/pkg/README.md", "env/lib/notes.md",
                "build/out.md", ".env"):  # fmt: skip
        assert not rules.could_hold(linked / rel), rel
    assert rules.could_hold(linked / "notes" / "real.md")
