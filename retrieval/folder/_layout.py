"""Where the files of an index live.

    <folder>/.kbgraph/
        .gitignore        "*"
        .lock             readers shared, generation swap exclusive
        .write.lock       one writer at a time
        CURRENT           name of the live generation (replaced atomically)
        HISTORY           the published generations still kept, oldest first, then a
                          ``# checksum <hex>`` line
        cache.sqlite      embedding cache, kept across generations and rebuilds
        gen-<id>/         meta.json, chunks.jsonl, offsets.bin, vectors.bin, vectors.sums,
                          bm25/, ann.*

A writer builds a new ``gen-*`` folder beside the live one and publishes it by replacing
``CURRENT``; a process killed at any instant leaves either the old or the new pointer,
both naming complete generations. ``HISTORY`` (replaced atomically before ``CURRENT``)
lists every published generation still kept; after publishing, a writer keeps the last
``keep_versions`` of them and removes every other folder (older versions, and unpublished
folders of writers that died).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from kbgraph.errors import (
    ConfigError,
    IndexCorruptError,
    IndexNotFoundError,
    IndexUnreadableError,
)

from .._fs import fsync_dir, write_file_atomic
from ..records import json_checksum
from ..storage import LEGACY_FORMAT, REPAIR
from ._lock import file_lock

DIR_MODE = 0o700
FILE_MODE = 0o600
INDEX_DIR_NAME = ".kbgraph"
GITIGNORE = b"*\n"
# Every name an index folder may hold: what a writer, a reader and SQLite (the cache's
# -wal/-shm/-journal) create, and the temporary files of atomic writes.
_INDEX_ENTRY = re.compile(
    r"^(?:\.gitignore|\.lock|\.write\.lock|CURRENT|HISTORY|cache\.sqlite(?:-wal|-shm|-journal)?"
    r"|gen-[0-9a-f]+-[0-9a-f]+|\.[^/]+\.\d+\.tmp)$"
)
_GENERATION_NAME = re.compile(r"gen-[0-9a-f]+-[0-9a-f]+")
_TMP_NAME = re.compile(r"\.[^/]+\.(\d+)\.tmp")
_HISTORY_SUM = "# checksum "
_LOCK_FILES = (".lock", ".write.lock")
_GENERATION_ENTRY = re.compile(
    r"^(?:meta\.json|chunks\.jsonl|offsets\.bin|vectors\.(?:bin|sums)|bm25|ann\.(?:usearch|keys\.npy"
    r"|rows\.npy)|\.[^/]+\.\d+\.tmp)$"
)


@dataclass(frozen=True, slots=True)
class IndexLayout:
    root: Path

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def write_lock(self) -> Path:
        return self.root / ".write.lock"

    @property
    def current(self) -> Path:
        return self.root / "CURRENT"

    @property
    def history(self) -> Path:
        return self.root / "HISTORY"

    @property
    def cache(self) -> Path:
        return self.root / "cache.sqlite"

    def generation(self, name: str) -> Path:
        return self.root / name

    def check_folder(self) -> None:
        """The index folder, where it exists, is a folder this user can read: a file in
        its place, or a folder without permission, is said as such (not as a missing or
        damaged index)."""
        if not os.path.lexists(self.root):
            return
        if not self.root.is_dir():
            raise IndexCorruptError(
                f"{self.root} is a file, not an index folder; kbgraph does not remove files it "
                "did not write: rename or delete it, then run `kbgraph index` (or pass "
                "--index-dir)"
            )
        if not os.access(self.root, os.R_OK | os.X_OK):
            raise IndexUnreadableError(
                f"cannot read the index folder {self.root} (permission denied); give this "
                f"user access (chmod u+rwx {self.root}) or use another --index-dir"
            )

    def ensure(self) -> list[str]:
        """Create the index folder, or adopt an existing one that is an index or empty.
        Only a folder created here or already an index is made private (0700): an
        ``--index-dir`` pointing at some other folder must not change its mode. Damage to
        kbgraph's own names is repaired (a lock file that is a folder, a generation that
        is a file); the list says what was."""
        self.check_folder()
        created = not self.root.exists()
        self.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        repaired = [] if created else self._repair_names()
        if not created:
            foreign = self.foreign_entries()
            if foreign and not self.root.joinpath(".gitignore").is_file():
                raise ConfigError(
                    f"{self.root} is not a kbgraph index (it holds {_preview(foreign)}); "
                    "choose a new or empty folder for the index (--index-dir)"
                )
            if foreign:
                raise ConfigError(
                    f"{self.root} holds files a kbgraph index never has "
                    f"({_preview(foreign)}); move them away or choose another --index-dir"
                )
        if created or self.is_index():
            os.chmod(self.root, DIR_MODE)
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            write_file_atomic(gitignore, GITIGNORE)
        return repaired

    def _repair_names(self) -> list[str]:
        """Remove what stands where kbgraph's lock files and generation folders go (a
        folder for ``.lock``, a file named like a generation) in a folder that is an
        index (its ``*`` .gitignore): kbgraph's own names, nothing of anyone else's."""
        try:
            if (self.root / ".gitignore").read_bytes() != GITIGNORE:
                return []
        except OSError:
            return []
        repaired = []
        for entry in sorted(self.root.iterdir(), key=lambda e: e.name):
            wrong = (entry.name in _LOCK_FILES and (entry.is_symlink() or not entry.is_file())) or (
                _GENERATION_NAME.fullmatch(entry.name) is not None
                and (entry.is_symlink() or not entry.is_dir())
            )
            if wrong:
                what = "a folder" if entry.is_dir() and not entry.is_symlink() else "not a folder"
                if entry.name in _LOCK_FILES:
                    what = "not a file"
                _remove(entry)
                repaired.append(f"{entry} was {what}; removed")
        return repaired

    def foreign_entries(self) -> list[str]:
        """Names in the index folder (and its generations) that no index writes."""
        foreign = []
        for entry in sorted(self.root.iterdir(), key=lambda e: e.name):
            if not _INDEX_ENTRY.match(entry.name):
                foreign.append(entry.name)
            elif entry.name.startswith("gen-"):
                if not entry.is_dir() or entry.is_symlink():
                    foreign.append(entry.name)
                    continue
                try:
                    inner = sorted(entry.iterdir(), key=lambda e: e.name)
                except OSError:
                    continue  # an unreadable generation: damage of ours, not a foreign file
                foreign += [
                    f"{entry.name}/{item.name}"
                    for item in inner
                    if not _GENERATION_ENTRY.match(item.name)
                ]
        return foreign

    def is_index(self) -> bool:
        """True when the folder is recognisably a kbgraph index: our ``.gitignore``, at
        least one other index entry, and nothing an index never holds."""
        root = self.root
        if root.is_symlink() or not root.is_dir():
            return False
        try:
            if (root / ".gitignore").read_bytes() != GITIGNORE:
                return False
            names = {entry.name for entry in root.iterdir()}
            return len(names) > 1 and not self.foreign_entries()
        except OSError:
            return False

    def delete(self, *, documents: Path, lock_timeout: float) -> None:
        """Remove the whole index folder, cache included. Refuses a folder that is (or
        holds) the ``documents`` folder or is not recognisably an index, and takes the
        writer's lock first, so that a running ``kbgraph index`` finishes before."""
        if not self.root.exists():
            raise IndexNotFoundError(f"{documents} has no index to delete ({self.root})")
        if documents == self.root or documents.is_relative_to(self.root):
            raise ConfigError(
                f"refusing to delete {self.root}: it is or holds the documents folder "
                f"{documents}; point --index-dir at the index folder itself"
            )
        self._check_deletable()  # before the locks: they would create files in it
        with (
            file_lock(self.write_lock, "exclusive", lock_timeout, "delete index"),
            file_lock(self.lock, "exclusive", lock_timeout, "delete index"),
        ):
            self._check_deletable()  # as it is now that no writer runs
            shutil.rmtree(self.root)

    def _check_deletable(self) -> None:
        if not self.is_index():
            foreign = self.foreign_entries() if self.root.is_dir() else []
            why = f" (it holds {_preview(foreign)})" if foreign else ""
            raise ConfigError(
                f"refusing to delete {self.root}: it is not a kbgraph index{why}; "
                "delete only an index folder (with CURRENT, gen-* and a `*` .gitignore)"
            )

    def current_name(self) -> str | None:
        """The live generation's name; None when there is no index yet. A CURRENT that is
        not the name of an existing generation folder is damage (IndexCorruptError)."""
        self.check_folder()
        try:
            raw = self.current.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise IndexCorruptError(
                f"{self.current} cannot be read ({exc.strerror}); {REPAIR}"
            ) from None
        name = raw.decode("utf-8", "replace").strip()
        if not _GENERATION_NAME.fullmatch(name):
            raise IndexCorruptError(
                f"{self.current} is damaged (it holds {_shown(raw)}, not a generation name); "
                f"{REPAIR}"
            )
        if not self.generation(name).is_dir():
            raise IndexCorruptError(f"{self.current} names a missing generation {name!r}; {REPAIR}")
        return name

    def has_pointer(self) -> bool:
        """CURRENT exists (an index was published here, whether or not it is intact)."""
        return os.path.lexists(self.current)

    def kept_without_pointer(self) -> list[str]:
        """Generations HISTORY lists as published whose folders are there, newest first,
        while CURRENT is missing (a deleted pointer: damage, not a new index); [] when
        CURRENT exists or nothing was published."""
        if self.has_pointer():
            return []
        try:
            names = self.history_names()
        except IndexCorruptError:
            names = []
        return [n for n in reversed(names) if self._exists(n)]

    def generations(self) -> list[Path]:
        """The generation folders, newest first (names start with the creation time)."""
        found = (
            [
                entry
                for entry in self.root.iterdir()
                if _GENERATION_NAME.fullmatch(entry.name) and entry.is_dir()
            ]
            if self.root.is_dir()
            else []
        )
        return sorted(found, key=lambda p: int(p.name.split("-")[1], 16), reverse=True)

    def new_generation(self) -> Path:
        name = f"gen-{time.time_ns():x}-{secrets.token_hex(3)}"
        path = self.generation(name)
        path.mkdir(mode=DIR_MODE)
        return path

    def history_names(self) -> list[str]:
        """The generations HISTORY lists, oldest first ([] without HISTORY). HISTORY that
        is not a list of generation names or does not match its checksum line is damage
        (``IndexCorruptError``): a plain ``kbgraph index`` rebuilds it. HISTORY written
        before the checksum line existed is read if every line is a generation name, but
        only on an index no format-2 writer published: one always writes the line (and
        HISTORY before CURRENT), so a missing line or file there is damage, which would
        otherwise make the next run prune the kept versions HISTORY no longer lists."""
        try:
            raw = self.history.read_bytes()
        except FileNotFoundError:
            current = self._current_or_none()
            if current is not None and self._sealed_by_writer([current]):
                raise self._history_damaged("it is missing") from None
            return []
        except OSError as exc:
            raise self._history_damaged(f"cannot be read: {exc.strerror}") from None
        try:
            lines = raw.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            raise self._history_damaged("it is not UTF-8 text") from None
        while lines and not lines[-1]:
            lines.pop()
        if lines and lines[-1].startswith(_HISTORY_SUM):
            check = lines.pop()[len(_HISTORY_SUM) :]
            if check != json_checksum(lines):
                raise self._history_damaged("it does not match its checksum")
        elif self._sealed_by_writer([*lines, self._current_or_none()]):
            raise self._history_damaged("its checksum line is missing")
        bad = next((line for line in lines if not _GENERATION_NAME.fullmatch(line)), None)
        if bad is not None:
            raise self._history_damaged(f"it holds {_shown(bad.encode())}, not a generation name")
        return lines

    def _current_or_none(self) -> str | None:
        try:
            return self.current_name()
        except IndexCorruptError:
            return None

    def _sealed_by_writer(self, names: list[str | None]) -> bool:
        """Whether one of these published generations was written by a format-2 writer
        (its meta.json says a later format than 1): that writer sealed HISTORY."""
        return any(
            name is not None
            and _GENERATION_NAME.fullmatch(name)
            and _format_of(self.generation(name) / "meta.json") not in (None, LEGACY_FORMAT)
            for name in names
        )

    def _history_damaged(self, why: str) -> IndexCorruptError:
        return IndexCorruptError(
            f"{self.history} is damaged ({why}); run `kbgraph index` to repair it (the list "
            "of kept versions is rebuilt from the generation folders)"
        )

    def _write_history(self, names: list[str]) -> None:
        lines = [*names, _HISTORY_SUM + json_checksum(names)]
        write_file_atomic(self.history, "".join(f"{n}\n" for n in lines).encode("utf-8"))

    def repair_history(self) -> list[str]:
        """A damaged HISTORY rebuilt from the generation folders whose meta.json is there
        (oldest first), so that no kept version is pruned for it; call with the writer's
        lock held. Returns what was repaired."""
        try:
            self.history_names()
            return []
        except IndexCorruptError as exc:
            damage = str(exc).split("; ", 1)[0]
        names = [g.name for g in reversed(self.generations()) if (g / "meta.json").is_file()]
        self._write_history(names)
        return [f"{damage}; rebuilt from {len(names)} generation folder(s)"]

    def published(self) -> list[str]:
        """The kept published generations, oldest first, the current one last. An index
        written before ``HISTORY`` existed has its current generation only."""
        names = self.history_names()
        try:
            current = self.current_name()
        except IndexCorruptError:
            current = None  # a damaged CURRENT is being repaired: the new one replaces it
        kept = [
            n for n in names if n != current and _GENERATION_NAME.fullmatch(n) and self._exists(n)
        ]
        return kept + ([current] if current else [])

    def _exists(self, name: str) -> bool:
        return self.generation(name).is_dir()

    def publish(self, generation: Path) -> None:
        """Make ``generation`` current: the last entry of HISTORY, then CURRENT (call with
        the exclusive ``.lock`` held). Publishing a kept generation again restores it."""
        fsync_dir(generation)
        names = [n for n in self.published() if n != generation.name] + [generation.name]
        self._write_history(names)
        write_file_atomic(self.current, generation.name.encode("utf-8") + b"\n")

    def prune(self, keep_versions: int) -> list[str]:
        """Keep the last ``keep_versions`` published generations (the current one always),
        delete every other generation folder and the temporary files of writers that died
        mid-write (``.CURRENT.<pid>.tmp`` of a killed process is never renamed); return the
        generations deleted. A reader that opened a deleted generation keeps its open files
        (POSIX unlink semantics), so it goes on working until it closes them. Call with the
        writer's lock held."""
        published = self.published()
        kept = published[-max(1, keep_versions) :]
        if len(kept) < len(published):
            # HISTORY first: a writer killed mid-prune leaves folders no longer listed (the
            # next prune deletes them), never a listed version whose folder is gone.
            self._write_history(kept)
        removed = []
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name.startswith("gen-") and entry.name not in kept:
                _remove(entry)
                removed.append(entry.name)
            elif (match := _TMP_NAME.fullmatch(entry.name)) and not _alive(int(match[1])):
                entry.unlink(missing_ok=True)
        return sorted(removed)


def _format_of(meta: Path) -> object:
    """The ``format_version`` a generation's meta.json names (None: unreadable)."""
    try:
        data = json.loads(meta.read_bytes())
    except (OSError, ValueError):
        return None
    return data.get("format_version") if isinstance(data, dict) else None


def _alive(pid: int) -> bool:
    """A process with this id exists (ours included). A pid reused since the writer died
    keeps its file until that process ends too: harmless, it is only left longer."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _remove(path: Path) -> None:
    """Remove a file or a whole folder of the index, one this user made unreadable
    included (a folder of mode 000 cannot be listed, so it is opened up first)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    with contextlib.suppress(OSError):
        os.chmod(path, DIR_MODE)
    for dirpath, dirs, _files in os.walk(path, onerror=lambda _exc: None):
        for name in dirs:
            inner = os.path.join(dirpath, name)
            if not os.path.islink(inner):
                with contextlib.suppress(OSError):
                    os.chmod(inner, DIR_MODE)
    shutil.rmtree(path, ignore_errors=True)


def _shown(raw: bytes, limit: int = 24) -> str:
    if not raw.strip():
        return "nothing"
    return repr(raw[:limit]) + ("…" if len(raw) > limit else "")


def _preview(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def secure_tree(path: Path) -> None:
    """Folders 0700 and files 0600: an index holds the text of private documents."""
    for dirpath, _dirnames, filenames in os.walk(path):
        os.chmod(dirpath, DIR_MODE)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), FILE_MODE)
