"""The folder scanner: include/exclude rules, secrets, symlinks, sizes, stat-only scanning."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError, GlobLimitError
from kbgraph.retrieval._config import ScanConfig
from kbgraph.retrieval._scan import (
    ScanResult,
    compile_globs,
    file_kind,
    glob_to_regex,
    scan_folder,
)

EVERYTHING = ScanConfig(include=("**/*",))


def make_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)


def rels(result: ScanResult) -> list[str]:
    return [f.rel for f in result.files]


def reasons(result: ScanResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


needs_symlinks = pytest.mark.skipif(
    sys.platform == "win32", reason="creating symbolic links needs privileges on Windows"
)


# --- glob semantics ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.md", "a.md", True),
        ("**/*.md", "docs/deep/a.md", True),
        ("**/*.md", "docs/a.mdx", False),
        ("*.md", "docs/a.md", True),  # no slash: any depth
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/sub/a.md", False),  # * stays inside one folder
        ("docs/**/*.md", "docs/a.md", True),  # **/ matches zero folders
        ("docs/**/*.md", "docs/x/y/a.md", True),
        ("docs/**", "docs/x/y/a.md", True),
        ("docs/", "docs/x/a.md", True),  # trailing slash: everything below
        ("docs/", "docsx/a.md", False),
        ("./docs/*.txt", "docs/a.txt", True),
        ("**/.git/**", ".git/HEAD", True),
        ("**/.git/**", "src/.git/objects/ab", True),
        ("**/.git/**", "src/.github/x.yml", False),
        ("a?.txt", "ab.txt", True),
        ("a?.txt", "a/.txt", False),
        ("file[0-9].txt", "file7.txt", True),
        ("file[!0-9].txt", "file7.txt", False),
        ("file[!0-9].txt", "filex.txt", True),
        ("file[.txt", "file[.txt", True),  # unclosed class is a literal
        ("file[^a].txt", "file^.txt", True),  # a leading ^ is a literal caret
        ("file[^a].txt", "fileb.txt", False),
        ("file[[x].txt", "file[.txt", True),
        ("a+b (1).md", "a+b (1).md", True),  # regex characters are literal
        ("**/café/*.md", "x/café/menü.md", True),
        ("**/*.MD", "a.md", False),  # case-sensitive
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(re.fullmatch(glob_to_regex(pattern), path)) is matches


def test_compile_globs_empty_list_matches_nothing() -> None:
    assert compile_globs([]).fullmatch("a.md") is None
    assert compile_globs(["", "  "]).fullmatch("a.md") is None


BACKTRACKING = "**?**?**?**?**?**?**Z"  # issue 42 hole 3: 17-26 s per search before


def test_many_wildcards_match_without_backtracking() -> None:
    """Every glob is matched by work bounded by path length x pattern length: the
    automaton's character tests are counted (before, ``re`` backtracked for seconds)."""
    from kbgraph.retrieval import _globs

    glob = compile_globs([BACKTRACKING * 2])
    assert glob._regex is None and len(glob._slow) == 1  # not handed to ``re``
    automaton = glob._slow[0]
    calls = [0]
    for i, token in enumerate(automaton.tokens):
        automaton.tokens[i] = _globs.replace(token, accepts=_counted(token.accepts, calls))
    path = "a/" * 25
    assert glob.fullmatch(path) is None
    assert calls[0] <= (len(path) + 1) * len(automaton.tokens)
    assert glob.fullmatch("x/" + "ab" * 6 + "Z" + "ab" * 6 + "Z") is True


def _counted(accepts: object, calls: list[int]) -> object:
    def wrapped(ch: str) -> bool:
        calls[0] += 1
        return bool(accepts(ch))  # type: ignore[operator]

    return wrapped


@pytest.mark.parametrize("seed", [1, 2])
def test_the_automaton_matches_as_the_regex_does(seed: int) -> None:
    import random

    from kbgraph.retrieval._globs import _Automaton, _normalised, _tokens

    rng = random.Random(seed)
    pieces = ["*", "**", "?", "a", "B", "/", "**/", "[ab]", "[!a]", "[A-Z]"]
    for _ in range(3000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        path = "".join(rng.choice("aAbB/.") for _ in range(rng.randint(1, 9)))
        for fold in (False, True):
            expected = re.fullmatch(glob_to_regex(pattern), path, re.I if fold else 0)
            got = _Automaton(_tokens(_normalised(pattern)), fold).fullmatch(path)
            assert got is (expected is not None), (pattern, path, fold)


HEAVY = "**e" * 31 + "**Z"  # 96 characters, within a glob's limits


def test_a_glob_matches_a_path_once_its_folders_were_seen_by_lookups() -> None:
    """issue 42 hole 3 leftover: the automaton kept no state between paths, so ``HEAVY``
    cost 1 ms per path of 113 characters (a minute for 50 of them over 1,000 files). Its
    moves are kept: a path like one already matched tests no character again."""
    from kbgraph.retrieval import _globs

    glob = compile_globs([HEAVY])
    automaton = glob._slow[0]
    calls = [0]
    for i, token in enumerate(automaton.tokens):
        automaton.tokens[i] = _globs.replace(token, accepts=_counted(token.accepts, calls))
    path = "section-01-reference/subsection-02-notes/document-0003-release-notes.md"
    assert glob.fullmatch(path) is None
    first, calls[0] = calls[0], 0
    assert first > 0
    assert glob.fullmatch(path) is None and glob.fullmatch(path.replace("3", "3")) is None
    assert calls[0] == 0


@pytest.mark.parametrize("limit", [2, 5, 512])
def test_the_automaton_keeps_matching_as_the_regex_does_past_its_limit(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from kbgraph.retrieval import _globs

    monkeypatch.setattr(_globs, "_MAX_DFA_STATES", limit)  # starts afresh again and again
    rng = random.Random(limit)
    pieces = ["*", "**", "?", "a", "B", "/", "**/", "[ab]", "[!a]"]
    for _ in range(200):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(3, 9)))
        automaton = _globs._Automaton(_globs._tokens(_globs._normalised(pattern)), False)
        for _ in range(20):
            path = "".join(rng.choice("aAbB/.") for _ in range(rng.randint(1, 12)))
            expected = re.fullmatch(glob_to_regex(pattern), path) is not None
            assert automaton.fullmatch(path) is expected, (pattern, path)


@pytest.mark.parametrize(
    ("paths", "what"),
    [
        ((HEAVY,) * 50, "characters in all"),
        ((HEAVY,) * 3, "wildcards in all"),
        (tuple(f"docs/{i}" for i in range(51)), "names 51 paths"),
        (tuple(f"docs/{'x' * 500}{i}" for i in range(10)), "characters in all"),
    ],
)
def test_a_search_filters_globs_are_bounded_together_in_one_line(
    paths: tuple[str, ...], what: str
) -> None:
    """issue 42 hole 3 leftover: each glob was within the limits, 50 of them took a minute
    per search (CLI, MCP); the inspector took any number. ``SearchFilters`` is where the
    CLI, MCP, the inspector and the subgraph's scope all check their paths."""
    from kbgraph.retrieval import SearchFilters

    with pytest.raises(GlobLimitError, match=what) as caught:
        SearchFilters(paths=paths)
    message = str(caught.value)
    assert "\n" not in message and "at most" in message and "pass fewer" in message


def test_a_search_filter_within_the_limits_matches_as_each_path_does() -> None:
    from kbgraph.retrieval import SearchFilters
    from kbgraph.retrieval._filters import path_matches

    paths = ("docs/**/*.md", "./src/api", "*.py", HEAVY, "docs/**/*.md", "notes/")
    filters = SearchFilters(paths=paths)
    for source in ["docs/a/b.md", "src/api/x.rs", "src/apix/y.rs", "a/b.py", "eeZ/q", "notes/n",
                   "notes", "README.md", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeZ"]:  # fmt: skip
        each = any(path_matches(source, p) for p in paths)
        assert filters.allows(source, "markdown") is each, source


@pytest.mark.parametrize("pattern", ["*?" * 20, "a" * 600, BACKTRACKING * 3])
def test_globs_past_the_limits_are_refused_in_one_line(pattern: str) -> None:
    from kbgraph.retrieval import SearchFilters

    for attempt in (lambda: compile_globs([pattern]), lambda: SearchFilters(paths=(pattern,))):
        with pytest.raises(ConfigError, match="a glob may have at most") as caught:
            attempt()
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("README.md", "markdown"),
        ("docs/Guide.MD", "markdown"),
        ("index.rst", "text"),
        ("notes.txt", "text"),
        ("Makefile", "text"),
        ("src/app.py", "code"),
        ("web/app.ts", "code"),
        ("main.rs", "code"),
        ("main.go", "code"),
        ("Main.java", "code"),
        ("lib.js", "code"),
        ("page.html", "html"),
        ("page.htm", "html"),
        ("paper.pdf", "pdf"),
        ("table.csv", "csv"),
        ("conf.json", "data"),
        ("conf.yaml", "data"),
        ("conf.yml", "data"),
        ("pyproject.toml", "data"),
    ],
)
def test_file_kind(rel: str, kind: str) -> None:
    assert file_kind(rel) == kind


# --- defaults -----------------------------------------------------------------------------


def test_default_scan_lists_included_files_sorted_with_metadata(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "b.md": "# B\n",
            "a/z.py": "print(1)\n",
            "a/data.csv": "x,y\n1,2\n",
            "image.png": b"\x89PNG\r\n",  # not included: reported, not listed
            "notes.txt": "hello",
        },
    )
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == ["a/data.csv", "a/z.py", "b.md", "notes.txt"]
    assert reasons(result) == {"image.png": "not-included"}
    by_rel = {f.rel: f for f in result.files}
    st = (tmp_path / "notes.txt").stat()
    assert by_rel["notes.txt"].size == 5 == st.st_size
    assert by_rel["notes.txt"].mtime_ns == st.st_mtime_ns
    assert by_rel["a/z.py"].path == (tmp_path / "a" / "z.py").resolve()
    assert by_rel["a/z.py"].path.is_absolute()
    assert [by_rel[r].kind for r in rels(result)] == ["csv", "code", "markdown", "text"]


@pytest.mark.parametrize(
    ("excluded", "folder"),
    [
        (".git/notes.md", ".git/"),
        ("sub/.git/objects/readme.md", "sub/.git/"),
        (".venv/lib/site.py", ".venv/"),
        ("node_modules/pkg/README.md", "node_modules/"),
        ("web/node_modules/pkg/index.js", "web/node_modules/"),
        ("__pycache__/mod.py", "__pycache__/"),
        (".mypy_cache/x.json", ".mypy_cache/"),
    ],
)
def test_excluded_folders_are_pruned_and_reported_once(
    tmp_path: Path, excluded: str, folder: str
) -> None:
    # Many files inside: the report names the folder once, never the files in it, so that
    # `kbgraph index --json` stays short on a big repository.
    inside = {f"{folder}more/f{i}.md": "x" for i in range(50)}
    make_tree(tmp_path, {excluded: "x", "keep.md": "x", **inside})
    result = scan_folder(tmp_path, EVERYTHING.model_copy(update={"exclude": ScanConfig().exclude}))
    assert rels(result) == ["keep.md"]
    assert reasons(result) == {folder: "excluded-dir"}


@pytest.mark.parametrize("marker", ["pyvenv.cfg", "conda-meta/history"])
def test_environment_detected_by_marker_whatever_its_name(tmp_path: Path, marker: str) -> None:
    make_tree(tmp_path, {f"tools-env/{marker}": "home = /usr", "tools-env/lib/a.py": "x"})
    make_tree(tmp_path, {"keep.py": "x"})
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == ["keep.py"]
    assert reasons(result) == {"tools-env/": "excluded-dir"}
    assert marker.split("/")[0] in result.skipped[0].detail


@pytest.mark.parametrize("name", ["env", "venv", "environments/env"])
def test_a_folder_named_like_an_env_without_its_marker_is_indexed(
    tmp_path: Path, name: str
) -> None:
    make_tree(tmp_path, {f"{name}/setup.md": "# Configuring the environment"})
    assert rels(scan_folder(tmp_path, ScanConfig())) == [f"{name}/setup.md"]


def test_files_excluded_by_pattern_or_not_included_are_reported(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a.md": "x", "b.md": "x", "logo.png": b"\x89PNG", "build/out.md": "x"})
    result = scan_folder(tmp_path, ScanConfig(exclude=("b.md", "build/")))
    assert rels(result) == ["a.md"]
    assert reasons(result) == {
        "b.md": "excluded",
        "build/": "excluded-dir",
        "logo.png": "not-included",
    }


def test_pyvenv_cfg_at_the_root_does_not_hide_the_folder(tmp_path: Path) -> None:
    make_tree(tmp_path, {"pyvenv.cfg": "home = /usr", "notes.md": "x"})
    assert rels(scan_folder(tmp_path, ScanConfig())) == ["notes.md"]


@pytest.mark.parametrize("use_argument", [True, False])
def test_index_folder_is_always_excluded(tmp_path: Path, use_argument: bool) -> None:
    index_name = "my-index" if use_argument else ".kbgraph"
    make_tree(tmp_path, {f"{index_name}/chunks.md": "x", "doc.md": "x"})
    index_dir = tmp_path / index_name if use_argument else None
    result = scan_folder(tmp_path, EVERYTHING, index_dir=index_dir)
    assert rels(result) == ["doc.md"]
    assert result.skipped == []


# --- secrets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("secret", "reported_as"),
    [
        (".env", ".env"),
        ("app/.env.local", "app/.env.local"),
        ("tls/server.pem", "tls/server.pem"),
        ("tls/server.key", "tls/server.key"),
        ("keys/id_rsa", "keys/id_rsa"),
        ("keys/id_ed25519.pub", "keys/id_ed25519.pub"),
        ("KEYS/ID_RSA", "KEYS/ID_RSA"),  # case does not hide a secret
        ("credentials", "credentials"),
        ("deploy/credentials.json", "deploy/credentials.json"),
        ("home/.ssh/config", "home/.ssh/"),  # a secret folder is reported once
        (".aws/credentials", ".aws/"),
        (".envrc", ".envrc"),  # direnv
        ("deploy/prod.env", "deploy/prod.env"),
        (".envs/.production/.django", ".envs/"),
        ("infra/prod.tfvars", "infra/prod.tfvars"),
        (".git-credentials", ".git-credentials"),
    ],
)
@pytest.mark.parametrize("include_exactly", [False, True])
def test_secrets_are_denied_even_when_included(
    tmp_path: Path, secret: str, reported_as: str, include_exactly: bool
) -> None:
    make_tree(tmp_path, {secret: "TOKEN=hunter2", "readme.md": "x"})
    include = (secret,) if include_exactly else ("**/*",)
    result = scan_folder(tmp_path, ScanConfig(include=include))
    assert secret not in rels(result)
    expected = {reported_as: "secret"}
    if include_exactly:
        expected["readme.md"] = "not-included"
    assert reasons(result) == expected


# --- size, names, custom patterns -----------------------------------------------------------


@pytest.mark.parametrize(("size", "kept"), [(99, True), (100, True), (101, False)])
def test_max_file_size(tmp_path: Path, size: int, kept: bool) -> None:
    make_tree(tmp_path, {"big.txt": b"x" * size})
    result = scan_folder(tmp_path, ScanConfig(max_file_bytes=100))
    assert rels(result) == (["big.txt"] if kept else [])
    assert reasons(result) == ({} if kept else {"big.txt": "too-large"})
    if not kept:
        assert "101 bytes" in result.skipped[0].detail


@pytest.mark.parametrize(
    "rel",
    ["café/naïve résumé.md", "日本語/メモ.txt", "emoji 😀 notes.md", "Ελληνικά.py", "a b/c d.md"],
)
def test_non_ascii_file_names(tmp_path: Path, rel: str) -> None:
    make_tree(tmp_path, {rel: "contenu"})
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == [rel]
    assert result.files[0].path.read_text("utf-8") == "contenu"


@pytest.mark.skipif(sys.platform != "linux", reason="Linux allows any bytes in file names")
def test_file_name_that_is_not_utf8_is_reported(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("x")
    result = scan_folder(tmp_path, ScanConfig())
    assert result.files == []
    assert reasons(result) == {"caf\ufffd.md": "unreadable"}


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        (("docs/**",), (), ["docs/a.md", "docs/sub/b.txt"]),
        (("**/*.md",), ("docs/sub/**",), ["docs/a.md", "top.md"]),
        (("*.md", "*.txt"), ("*.txt",), ["docs/a.md", "top.md"]),
        (("**/*",), ("docs/",), ["src/main.py", "top.md"]),
        (("src/*.py", "top.md"), (), ["src/main.py", "top.md"]),
        ((), (), []),
    ],
)
def test_custom_include_and_exclude(
    tmp_path: Path, include: tuple[str, ...], exclude: tuple[str, ...], expected: list[str]
) -> None:
    tree = ["top.md", "docs/a.md", "docs/sub/b.txt", "src/main.py"]
    make_tree(tmp_path, dict.fromkeys(tree, "x"))
    result = scan_folder(tmp_path, ScanConfig(include=include, exclude=exclude))
    assert rels(result) == expected
    # Every other file is accounted for, by itself or by its excluded folder.
    left_out = reasons(result)
    assert set(left_out.values()) <= {"excluded", "excluded-dir", "not-included"}
    for rel in set(tree) - set(expected):
        assert any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in left_out), rel


# --- symbolic links ---------------------------------------------------------------------------


@needs_symlinks
def test_link_to_a_file_outside_is_skipped(tmp_path: Path) -> None:
    outside, root = tmp_path / "outside", tmp_path / "root"
    make_tree(outside, {"secret-notes.md": "x"})
    make_tree(root, {"real.md": "x"})
    (root / "linked.md").symlink_to(outside / "secret-notes.md")
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)
    result = scan_folder(root, ScanConfig())
    assert rels(result) == ["real.md"]
    assert reasons(result) == {"linked.md": "symlink-outside", "linked-dir/": "symlink-outside"}


@needs_symlinks
def test_relative_link_escaping_with_dotdot_is_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(tmp_path, {"other.md": "x"})
    make_tree(root, {"a.md": "x"})
    (root / "up.md").symlink_to(Path("..") / "other.md")
    assert reasons(scan_folder(root, ScanConfig())) == {"up.md": "symlink-outside"}


@needs_symlinks
def test_link_to_a_file_inside_is_indexed_once_under_its_own_path(tmp_path: Path) -> None:
    make_tree(tmp_path, {"docs/real.md": "hello"})
    (tmp_path / "alias.md").symlink_to(Path("docs") / "real.md")
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == ["alias.md", "docs/real.md"]
    alias = result.files[0]
    assert alias.path == tmp_path.resolve() / "alias.md"
    assert alias.size == 5


@needs_symlinks
def test_symlinked_folder_loops_terminate_without_duplicates(tmp_path: Path) -> None:
    make_tree(tmp_path, {"a/b/doc.md": "x"})
    (tmp_path / "a" / "b" / "loop").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "a" / "mirror").symlink_to(Path("b"), target_is_directory=True)
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == ["a/b/doc.md"]
    assert result.skipped == []


@needs_symlinks
@pytest.mark.parametrize(("target", "reason"), [(".env", "secret"), ("missing.md", "unreadable")])
def test_links_to_secrets_and_broken_links(tmp_path: Path, target: str, reason: str) -> None:
    make_tree(tmp_path, {".env": "TOKEN=x"})
    (tmp_path / "notes.md").symlink_to(target)
    result = scan_folder(tmp_path, ScanConfig())
    assert result.files == []
    assert reasons(result) == {"notes.md": reason, ".env": "secret"}


@needs_symlinks
def test_a_link_is_indexed_only_when_the_walk_indexes_its_target(tmp_path: Path) -> None:
    """Issue 42 (h1b): ``hist.md -> .bash_history`` and ``make.md -> Makefile`` were indexed
    and served while the walk skipped both targets as not-included: a link's target must be
    a file the walk indexes itself (every rule: include, size), the detail naming it."""
    make_tree(
        tmp_path,
        {".bash_history": "SECRET history\n", "Makefile": "SECRET: target\n",
         "notes.txt": "fine\n", "big.txt": "y" * 100},
    )  # fmt: skip
    for name, target in {"hist.md": ".bash_history", "make.md": "Makefile",
                         "big.md": "big.txt", "ok.md": "notes.txt"}.items():  # fmt: skip
        (tmp_path / name).symlink_to(target)
    result = scan_folder(tmp_path, ScanConfig(max_file_bytes=50))
    assert rels(result) == ["notes.txt", "ok.md"]
    skipped = {s.path: (s.reason, s.detail) for s in result.skipped}
    assert skipped[".bash_history"][0] == skipped["hist.md"][0] == "not-included"
    assert skipped["Makefile"][0] == skipped["make.md"][0] == "not-included"
    assert skipped["big.txt"][0] == skipped["big.md"][0] == "too-large"
    for link, target in (("hist.md", ".bash_history"), ("make.md", "Makefile"),
                         ("big.md", "big.txt")):  # fmt: skip
        assert skipped[link][1].startswith(f"the link points at {target}"), skipped[link]


@needs_symlinks
def test_a_served_read_judges_a_links_target_as_the_walk_does(tmp_path: Path) -> None:
    """The read-time side of the same rule: MCP ``read``, resources and the inspector read
    through :func:`read_served`, which refused ``hist.md -> .bash_history`` only when the
    target was excluded or secret, not when no include pattern matched it."""
    from kbgraph.retrieval._loaders import SkipFile
    from kbgraph.retrieval._served import read_served

    make_tree(tmp_path, {".bash_history": "SECRET history\n", "notes.txt": "fine\n"})
    (tmp_path / "hist.md").symlink_to(".bash_history")
    (tmp_path / "ok.md").symlink_to("notes.txt")
    with pytest.raises(SkipFile) as refused:
        read_served(tmp_path, "hist.md", ScanConfig(), max_bytes=1000)
    assert refused.value.skipped.reason == "not-included"
    assert "the link points at .bash_history" in refused.value.skipped.detail
    assert read_served(tmp_path, "ok.md", ScanConfig(), max_bytes=1000) == b"fine\n"


@needs_symlinks
def test_a_served_link_to_a_file_edited_since_is_served(tmp_path: Path) -> None:
    """A link's names are its target's (rule 7): the link's own inode is never the one
    the scan saw, and an edited target with one name is the user's edit, not a hard link
    swapped in (it was refused as one)."""
    import hashlib

    from kbgraph.retrieval._served import read_served

    make_tree(tmp_path, {"notes.txt": "old\n"})
    (tmp_path / "ok.md").symlink_to("notes.txt")
    indexed = hashlib.sha256(b"old\n").hexdigest()
    (tmp_path / "notes.txt").write_text("new text\n")
    served = read_served(tmp_path, "ok.md", ScanConfig(), max_bytes=1000, indexed_sha256=indexed)
    assert served == b"new text\n"


@needs_symlinks
def test_scanning_through_a_linked_root_reports_real_paths(tmp_path: Path) -> None:
    make_tree(tmp_path, {"real/doc.md": "x"})
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    result = scan_folder(tmp_path / "alias", ScanConfig())
    assert rels(result) == ["doc.md"]
    assert result.files[0].path == (tmp_path / "real" / "doc.md").resolve()


# --- other file types and errors ------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need POSIX")
def test_named_pipe_is_reported_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")  # opening it for reading would block forever
    result = scan_folder(tmp_path, ScanConfig())
    assert result.files == []
    assert reasons(result) == {"pipe.txt": "unreadable"}


@pytest.mark.parametrize("missing", ["does-not-exist", "file.md"])
def test_root_must_be_a_folder(tmp_path: Path, missing: str) -> None:
    make_tree(tmp_path, {"file.md": "x"})
    with pytest.raises(ConfigError, match="not an existing folder"):
        scan_folder(tmp_path / missing, ScanConfig())


_opened: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _opened is not None and event == "open":
        _opened.append(str(args[0]))


@pytest.fixture
def opened_files() -> Iterator[list[str]]:
    """Every path ``open``ed while the test runs (audit hooks cannot be removed, so the
    hook is installed once and only records while a test holds this fixture)."""
    global _opened
    if not getattr(sys, "_kbgraph_scan_hook", False):
        sys.addaudithook(_audit)
        sys._kbgraph_scan_hook = True  # type: ignore[attr-defined]
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


def test_scanning_reads_no_file_contents(tmp_path: Path, opened_files: list[str]) -> None:
    make_tree(
        tmp_path,
        {"a.md": "x", "b/c.py": "x", ".env": "x", "d/pyvenv.cfg": "x", "big.txt": "y" * 50},
    )
    opened_files.clear()  # writing the fixture files opened them
    result = scan_folder(tmp_path, ScanConfig(max_file_bytes=10))
    assert rels(result) == ["a.md", "b/c.py"]
    assert reasons(result) == {".env": "secret", "big.txt": "too-large", "d/": "excluded-dir"}
    assert [p for p in opened_files if p.startswith(str(tmp_path))] == []


def test_a_hard_link_to_a_file_the_scan_leaves_out_is_not_indexed(tmp_path: Path) -> None:
    """Issue 42 (the matrix rerun): ``ln .env docs/notes.md`` before indexing indexed the
    secret under its harmless name; the scan judged names only. Links to ``.git/config``
    and to a file outside the folder are the same hole."""
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("private\n")
    root = tmp_path / "docs"
    make_tree(
        root,
        {
            ".env": "API_KEY=sk-üñí\n",
            ".git/config": "[remote]\r\n",
            "guide.md": "# Guide\r\n",
            "twin/a.md": "# Twin: both names indexed\n",
        },
    )
    os.link(root / ".env", root / "notes.md")
    os.link(root / ".git" / "config", root / "gitcfg.md")
    os.link(outside, root / "outside.md")
    os.link(root / "twin" / "a.md", root / "twin" / "b.md")
    os.symlink("twin/a.md", root / "via-symlink.md")  # a symlink is not another name
    result = scan_folder(root, ScanConfig())
    assert rels(result) == ["guide.md", "twin/a.md", "twin/b.md", "via-symlink.md"]
    skipped = {s.path: s for s in result.skipped}
    for rel in ("notes.md", "gitcfg.md", "outside.md"):
        assert skipped[rel].reason == "hard-link"
        assert "trust_hard_links" in skipped[rel].detail
    trusted = scan_folder(root, ScanConfig(trust_hard_links=True))
    assert {"notes.md", "gitcfg.md", "outside.md"} <= set(rels(trusted))
    assert reasons(trusted)[".env"] == "secret"


def test_a_hard_link_whose_other_name_is_not_included_is_not_indexed(tmp_path: Path) -> None:
    """Every name must be a file the scan indexes: one excluded by the include patterns is
    as unknown to the scan as a secret."""
    make_tree(tmp_path, {"a.md": "# A\n"})
    os.link(tmp_path / "a.md", tmp_path / "a.bin")
    result = scan_folder(tmp_path, ScanConfig())
    assert rels(result) == []
    assert reasons(result) == {"a.bin": "not-included", "a.md": "hard-link"}


def test_one_file_is_judged_by_every_name_as_the_walk_judges_it(tmp_path: Path) -> None:
    """Rule 7 held for the walk only: ``scan_one`` (``stats --validate``, every server's
    read) judged a name alone, so ``ln .env docs/notes.md`` was a file to read under its
    harmless name, as was a hard link to a file outside the folder."""
    from kbgraph.retrieval._loaders import SkipFile
    from kbgraph.retrieval._scan import scan_one
    from kbgraph.retrieval._served import read_served

    outside = tmp_path / "elsewhere.md"
    outside.write_text("# private\n")
    root = tmp_path / "docs"
    make_tree(root, {".env": "API_KEY=sk-1\n", "guide.md": "# Guide\n", "twin/a.md": "# A\n"})
    os.link(root / ".env", root / "notes.md")
    os.link(outside, root / "outside.md")
    os.link(root / "twin" / "a.md", root / "twin" / "b.md")
    for rel in ("notes.md", "outside.md"):
        assert scan_one(root, rel, ScanConfig()) is None, rel
        with pytest.raises(SkipFile) as refused:
            read_served(root, rel, ScanConfig(), max_bytes=1000)
        assert refused.value.skipped.reason == "hard-link"
        assert "--trust-hard-links" in refused.value.skipped.detail
        assert scan_one(root, rel, ScanConfig(trust_hard_links=True)) is not None
    for rel in ("twin/b.md", "guide.md"):  # every name indexed; one name
        assert scan_one(root, rel, ScanConfig()) is not None, rel
