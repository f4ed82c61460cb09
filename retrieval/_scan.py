"""Find the files of a folder that are worth indexing, reading metadata only.

The scan never opens a file: it lists folders and calls ``stat``, so that checking an
unchanged folder for freshness costs no reads. Content checks (binary, empty, encoding)
happen when a file is loaded (:mod:`kbgraph.retrieval._loaders`).

Rules, in the order they apply:

1. Pruned folders, never entered: folders matching an exclude pattern (``.git``,
   ``node_modules`` ... by default) and any folder holding a ``pyvenv.cfg`` or
   ``conda-meta`` (a virtualenv or conda env, whatever its name) are reported once each as
   ``excluded-dir`` (``path/``), never file by file, so that the report stays short on a
   big repository. The index folder (``index_dir`` and ``<root>/.kbgraph``) is kbgraph's
   own and is not reported; any other kbgraph index (a ``.kbgraph`` folder at any depth,
   or a folder holding ``CURRENT`` beside ``gen-*`` folders, or ``gen-*`` folders holding
   ``meta.json`` or ``chunks.jsonl`` when ``CURRENT`` was lost) is ``excluded-dir``: an
   index holds the text of other documents, never documents of its own (these markers:
   :mod:`._scan_marks`).
2. Files matching an exclude pattern: ``excluded``.
3. Secrets (:data:`~kbgraph.retrieval._config.SECRET_DENY`, matched ignoring case): reported as
   ``secret`` even when an include pattern matches them; a secret folder (``.ssh/``) is
   reported once and not entered.
4. Files matching no include pattern: ``not-included``.
5. Symbolic links are never followed out of the folder (``symlink-outside``). A link to a
   file inside the folder is indexed once, under the link's own path, when its name passes
   rules 2-4 and its target is a file the walk indexes itself, by the same rules: a
   target in a folder the walk does not enter (rule 1: ``.git/config``, ``node_modules/``,
   a virtualenv, an index) is ``excluded``, a target whose own path is excluded, secret or
   matches no include pattern (``hist.md -> .bash_history``, ``make.md -> Makefile``) gets
   the reason the target itself gets (``excluded``, ``secret``, ``not-included``), and a
   target too large or not a regular file is ``too-large`` or ``unreadable``; the detail
   names the target. A link to a folder is not entered (its target is scanned under its
   real path), so link loops cannot occur.
6. Files larger than ``max_file_bytes``: ``too-large``.
7. A file with several names (hard links) is indexed only when every name is a file this
   walk indexes (``hard-link`` otherwise): ``ln .env docs/notes.md`` or a link to
   ``.git/config`` or to a file outside the folder keeps a harmless name on an inode whose
   other name the rules above leave out, and names are all a scan judges.
   ``trust_hard_links`` turns this off (a folder of files hard-linked from a cache;
   :mod:`._scan_hard_links`).

Globs match the POSIX path relative to the root: ``*`` and ``?`` stay inside one folder,
``**`` crosses folders (``**/`` also matches no folder at all), a pattern without ``/``
matches at any depth (``*.md`` is ``**/*.md``) and a trailing ``/`` means "everything
below". Include and exclude patterns are case-sensitive.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kbgraph.errors import ConfigError

from ._config import SECRET_DENY, ScanConfig
from ._globs import GlobSet, compile_globs, glob_to_regex
from ._loaders import kind_of
from ._records import FileKind, ScannedFile, SkippedFile, SkipReason
from ._scan_hard_links import Inode, inode, without_stray_hard_links
from ._scan_marks import OTHER_INDEX, marked, marked_folder

DEFAULT_INDEX_DIRNAME = ".kbgraph"
# Rules 2-4 in a skip's detail: for a file by its own name, and for a link by its target's.
_NAME_REFUSED: dict[SkipReason, str] = {
    "excluded": "the name matches an exclude pattern",
    "secret": "the name matches a secret pattern",
    "not-included": "the name matches no include pattern",
}
_TARGET_REFUSED: dict[SkipReason, str] = {
    "excluded": "which an exclude pattern matches",
    "secret": "a secret",
    "not-included": "which matches no include pattern; a link is indexed only when its "
    "target would be",
}


@dataclass(frozen=True, slots=True)
class ScanResult:
    files: list[ScannedFile]
    skipped: list[SkippedFile]


def file_kind(rel: str) -> FileKind:
    """The kind of a file from its name: the loader table's (``_loaders/_kinds.py``)."""
    return kind_of(rel)


class _Rules:
    """The compiled patterns of one scan."""

    def __init__(self, config: ScanConfig) -> None:
        self.include = compile_globs(config.include)
        self.exclude = compile_globs(config.exclude)
        # Secret names are matched ignoring case: ID_RSA is as secret as id_rsa.
        self.secret = compile_globs(SECRET_DENY, ignore_case=True)
        self.max_bytes = config.max_file_bytes
        self.trust_hard_links = config.trust_hard_links

    @staticmethod
    def dir_matches(regex: GlobSet, rel: str) -> bool:
        # "x/**" patterns match "x/" and bare-name patterns match "x": try both forms.
        return bool(regex.fullmatch(rel + "/") or regex.fullmatch(rel))


class _Scanner:
    def __init__(self, root: Path, config: ScanConfig, index_dir: Path | None) -> None:
        self.root = root
        self.config, self.index_dir = config, index_dir
        self.rules = _Rules(config)
        pruned = {root / DEFAULT_INDEX_DIRNAME}
        if index_dir is not None:
            pruned.add(Path(os.path.realpath(index_dir)))
        self.pruned_dirs = {str(p) for p in pruned}
        self.files: list[ScannedFile] = []
        self.skipped: list[SkippedFile] = []
        self._names: dict[Inode, int] = {}  # (dev, ino) -> st_nlink, when > 1

    def run(self) -> ScanResult:
        pending: list[tuple[str, str]] = [(str(self.root), "")]
        while pending:
            abs_dir, rel_dir = pending.pop()
            pending.extend(self._scan_dir(abs_dir, rel_dir))
        if not self.rules.trust_hard_links:
            self._refuse_stray_hard_links()
        self.files.sort(key=lambda f: f.rel)
        self.skipped.sort(key=lambda s: s.path)
        return ScanResult(files=self.files, skipped=self.skipped)

    def _skip(self, rel: str, reason: SkipReason, detail: str) -> None:
        self.skipped.append(SkippedFile(rel, reason, detail))

    def _scan_dir(self, abs_dir: str, rel_dir: str) -> list[tuple[str, str]]:
        """Handle the files of one folder; return its sub-folders still to scan."""
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._skip(rel_dir + "/", "unreadable", f"cannot list the folder: {exc.strerror}")
            return []
        mark = marked(entries)
        if rel_dir and mark is not None:
            self._skip(rel_dir + "/", "excluded-dir", mark)
            return []
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not _is_utf8(entry.name):
                self._skip(_printable(rel), "unreadable", "the file name is not valid UTF-8")
                continue
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                self._skip(rel, "unreadable", exc.strerror or str(exc))
                continue
            if is_dir:
                if self._enter_dir(entry.path, rel):
                    subdirs.append((entry.path, rel))
            elif is_link:
                self._link(entry.path, rel)
            else:
                self._file(entry, rel)
        return subdirs

    def _enter_dir(self, abs_path: str, rel: str) -> bool:
        refused = self._refused_dir(rel)
        if refused is None:
            return True
        if abs_path not in self.pruned_dirs:  # the index itself goes unreported
            self._skip(rel + "/", *refused)
        return False

    def _refused_dir(self, rel: str) -> tuple[SkipReason, str] | None:
        """Why the walk does not enter folder ``rel`` by its path alone (None: it does)."""
        rules = self.rules
        if os.path.join(self.root, rel) in self.pruned_dirs:
            return "excluded-dir", "kbgraph's own index folder"
        if rel.rsplit("/", 1)[-1] == DEFAULT_INDEX_DIRNAME:
            return "excluded-dir", OTHER_INDEX
        if rules.dir_matches(rules.exclude, rel):
            return "excluded-dir", "the folder matches an exclude pattern"
        if rules.dir_matches(rules.secret, rel):
            return "secret", "the folder matches a secret pattern; not entered"
        return None

    def _refused_target(self, target_rel: str) -> tuple[SkipReason, str] | None:
        """Why a link's target (inside the root, no link on its path) is a file the walk
        would not index: in a folder it does not enter, or left out by its own path (rules
        2-4, the reason the walk gives the target itself). Without this a link
        ``docs/cfg.md -> ../.git/config`` or ``hist.md -> .bash_history`` serves what the
        walk keeps out. Size and file type are the target's stat's, judged by ``_add``."""
        parts = target_rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            refused = self._refused_dir(folder)
            if refused is None and (mark := marked_folder(os.path.join(self.root, folder))):
                refused = "excluded-dir", mark
            if refused is not None:
                reason: SkipReason = "secret" if refused[0] == "secret" else "excluded"
                return reason, f"the link points at {target_rel}, in {folder}/: {refused[1]}"
        if not _is_utf8(target_rel):
            return "unreadable", "the link points at a file whose name is not valid UTF-8"
        refused_name = self._refused_name(target_rel)
        if refused_name is None:
            return None
        what = _TARGET_REFUSED[refused_name]
        return refused_name, f"the link points at {target_rel}, {what}"

    def _refused_name(self, rel: str) -> SkipReason | None:
        """Rules 2-4: why the walk leaves out a file by its path (None: it does not)."""
        if self.rules.exclude.fullmatch(rel):
            return "excluded"
        if self.rules.secret.fullmatch(rel):
            return "secret"
        if not self.rules.include.fullmatch(rel):
            return "not-included"
        return None

    def _wanted(self, rel: str) -> bool:
        """Exclude and secret rules, then include; reports every file it turns away."""
        refused = self._refused_name(rel)
        if refused is not None:
            self._skip(rel, refused, _NAME_REFUSED[refused])
        return refused is None

    def _file(self, entry: os.DirEntry[str], rel: str) -> None:
        if not self._wanted(rel):
            return
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            self._skip(rel, "unreadable", exc.strerror or str(exc))
            return
        self._add(Path(entry.path), rel, st)

    def _link(self, abs_path: str, rel: str) -> None:
        rules = self.rules
        if rules.exclude.fullmatch(rel) or rules.dir_matches(rules.exclude, rel):
            self._skip(rel, "excluded", "the link's name matches an exclude pattern")
            return
        target = Path(os.path.realpath(abs_path))
        inside = target.is_relative_to(self.root)
        try:
            st = os.stat(target)
        except OSError:
            if self._wanted(rel):
                self._skip(rel, "unreadable", "broken symbolic link")
            return
        if stat.S_ISDIR(st.st_mode):
            # Never entered, and not reported when inside: that folder is scanned under its
            # real path, and not following links is what keeps link loops harmless.
            if not inside:
                self._skip(rel + "/", "symlink-outside", "the link points outside the folder")
            return
        if not self._wanted(rel):
            return
        if not inside:
            self._skip(rel, "symlink-outside", "the link points outside the folder")
            return
        target_rel = target.relative_to(self.root).as_posix()
        refused = self._refused_target(target_rel)
        if refused is not None:
            self._skip(rel, *refused)
        else:
            self._add(Path(abs_path), rel, st, target_rel)

    def _add(self, path: Path, rel: str, st: os.stat_result, target: str | None = None) -> None:
        # A link's stat is its target's: the detail names the target, as rule 5 says.
        of = f"the link points at {target}: " if target is not None and target != rel else ""
        if stat.S_ISDIR(st.st_mode):  # a folder took the place of a file of the index
            self._skip(rel, "unreadable", f"{of}a folder, not a file")
        elif not stat.S_ISREG(st.st_mode):
            self._skip(rel, "unreadable", f"{of}not a regular file (pipe, socket or device)")
        elif st.st_size > self.rules.max_bytes:
            detail = f"{of}{st.st_size} bytes > max_file_bytes {self.rules.max_bytes}"
            self._skip(rel, "too-large", detail)
        else:
            if st.st_nlink > 1:
                self._names[(st.st_dev, st.st_ino)] = st.st_nlink
            kind = file_kind(rel)
            self.files.append(
                ScannedFile(
                    path, rel, st.st_size, st.st_mtime_ns, kind, st.st_ctime_ns,
                    root=self.root, target=target or rel, dev=st.st_dev, ino=st.st_ino,
                )
            )  # fmt: skip

    def _refuse_stray_hard_links(self) -> None:
        """Rule 7 (:mod:`._scan_hard_links`) over the whole walk."""
        self.files, skipped = without_stray_hard_links(self.files, self._names)
        self.skipped.extend(skipped)

    def one(self, rel: str) -> ScannedFile | None:
        """``rel`` judged alone, as the walk would judge it (its folders are not checked).
        Rule 7 needs every name of a file: one with several names is judged by a walk of
        the folder (metadata only), which costs a scan, and only for such a file."""
        path = os.path.join(self.root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            self._link(path, rel)
        elif self._wanted(rel):
            self._add(Path(path), rel, st)
        found = self.files[-1] if self.files and self.files[-1].rel == rel else None
        if found is None or self.rules.trust_hard_links or inode(found) not in self._names:
            return found
        return self._kept_by_walk(found)

    def _kept_by_walk(self, found: ScannedFile) -> ScannedFile | None:
        """``found`` when the walk of the whole folder indexes it too (rule 7), else
        ``None`` with the walk's reason in :attr:`skipped`."""
        walk = _Scanner(self.root, self.config, self.index_dir).run()
        if any(f.rel == found.rel for f in walk.files):
            return found
        why = next((s for s in walk.skipped if s.path == found.rel), None)
        detail = "the file has several names and the walk of the folder does not index it"
        self.skipped.append(why or SkippedFile(found.rel, "hard-link", detail))
        return None


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def _printable(rel: str) -> str:
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def scan_folder(root: Path, config: ScanConfig, *, index_dir: Path | None = None) -> ScanResult:
    """List the indexable files under ``root`` (sorted by relative path) and the files
    left out with their reasons. Reads no file contents."""
    real_root = Path(os.path.realpath(root))
    if not real_root.is_dir():
        raise ConfigError(
            f"cannot scan {str(root)!r}: it is not an existing folder; "
            "pass the path of a folder of documents or code"
        )
    return _Scanner(real_root, config, index_dir).run()


def scan_one(root: Path, rel: str, config: ScanConfig) -> ScannedFile | None:
    """The scan's record of one file of ``root`` (None when the scan would not index it):
    what ``stats --validate`` reads a document through, as an indexing run would."""
    return _Scanner(Path(os.path.realpath(root)), config, None).one(rel)


__all__ = [
    "DEFAULT_INDEX_DIRNAME",
    "ScanResult",
    "ScannedFile",
    "compile_globs",
    "file_kind",
    "glob_to_regex",
    "scan_folder",
    "scan_one",
]
