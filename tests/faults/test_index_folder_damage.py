"""Damage to the index folder itself rather than to a generation's files: a deleted
``CURRENT``, a damaged ``HISTORY``, a generation that is a file, ``.kbgraph`` a file,
``.lock`` a folder, folders this user cannot read. Each is one line saying what happened
and what to run, and a plain ``kbgraph index`` repairs what it reports; the model of the
index is never switched, and no kept version is pruned for the damage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.conftest import (
    DOCS,
    INDEX,
    ROOT,
    Run,
    cli,
    generation,
    one_line_reason,
    write_docs,
)

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]


@pytest.fixture
def versions3(docs: Path) -> Path:
    """An index built with `fake`, three published versions kept."""
    for n in range(3):
        (docs / "retry.md").write_text(f"# Retry\n\nThe retry policy, version {n}.\n")
        assert cli("index", str(docs), "--embedding", "fake").code == 0
    return docs


def _versions(folder: Path) -> list[str]:
    run = cli("versions", str(folder), "--json")
    assert run.code == 0, run.stderr
    return [v["generation"] for v in run.json()["versions"]]


def test_a_deleted_current_is_reported_with_how_to_restore(versions3: Path) -> None:
    """Regression (issue 24, hole 5): search said "no index yet" while `versions` listed
    the kept generations."""
    (versions3 / INDEX / "CURRENT").unlink()
    run = cli("search", str(versions3), "retry")
    assert run.code == 5, run.stderr
    reason = one_line_reason(run)
    assert "CURRENT is missing" in reason and "kbgraph restore" in reason, reason
    assert len(_versions(versions3)) == 3
    assert cli("restore", str(versions3), "1").code == 0
    assert cli("search", str(versions3), "retry").code == 0


def test_a_plain_index_after_a_deleted_current_keeps_the_model(versions3: Path) -> None:
    """Regression (issue 24, hole 5): a plain `index` rebuilt an index built with `fake`
    with the default local model (128 chunks embedded)."""
    kept = _versions(versions3)
    (versions3 / INDEX / "CURRENT").unlink()
    run = cli("index", str(versions3), "--json")
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["embedding"]["provider"] == "fake", report["embedding"]
    assert report["embedded"] == 0 and report["repaired"], report
    assert set(kept[:2]) <= set(_versions(versions3))
    assert cli("stats", str(versions3), "--validate").code == 0


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00\x9c\x80binary", b"garbage\nmore words\n"])
def test_a_damaged_history_is_one_line_and_repaired_without_pruning(
    versions3: Path, garbage: bytes
) -> None:
    """Regression (issue 24, hole 5): binary HISTORY made stats, index, versions and
    restore exit 1 with a bare UnicodeDecodeError; UTF-8 garbage was accepted and the next
    run pruned a kept version."""
    kept = _versions(versions3)
    (versions3 / INDEX / "HISTORY").write_bytes(garbage)
    for command in (["stats"], ["versions"], ["restore", "2"]):
        run = cli(command[0], str(versions3), *command[1:])
        assert run.code == 5, (command, run.stderr)
        assert "HISTORY" in one_line_reason(run) and "kbgraph index" in one_line_reason(run)
    (versions3 / "retry.md").write_text("# Retry\n\nThe retry policy, version 3.\n")
    run = cli("index", str(versions3), "--json")
    assert run.code == 0, run.stderr
    assert any("HISTORY" in r for r in run.json()["repaired"])
    now = _versions(versions3)
    assert len(now) == 3 and now[1:] == kept[:2], (now, kept)


def test_a_generation_replaced_by_a_file_is_repaired(versions3: Path) -> None:
    """Regression (issue 24, hole 7): search said run `index`, and `index` refused."""
    live = generation(versions3)
    shutil.rmtree(live)
    live.write_text("not a folder\n")
    run = cli("search", str(versions3), "retry")
    assert run.code == 5 and "kbgraph index" in one_line_reason(run)
    run = cli("index", str(versions3), "--json")
    assert run.code == 0, run.stderr
    assert run.json()["embedded"] == 0 and run.json()["repaired"]
    assert not live.exists()
    assert cli("stats", str(versions3), "--validate").code == 0


def test_an_index_folder_that_is_a_file_is_one_line(docs: Path) -> None:
    """Regression (issue 24, hole 7): `.kbgraph` a file gave a FileExistsError."""
    (docs / INDEX).write_text("someone's notes\n")
    for command in ("index", "search", "stats"):
        args = [command, str(docs), *(["retry"] if command == "search" else [])]
        run = cli(*args, *(["--embedding", "fake"] if command == "index" else []))
        assert run.code == 5, (command, run.stderr)
        reason = one_line_reason(run)
        assert "is a file, not an index folder" in reason and "kbgraph index" in reason
    assert (docs / INDEX).read_text() == "someone's notes\n"  # never removed by kbgraph


def test_a_lock_file_that_is_a_folder_is_repaired(docs: Path) -> None:
    """Regression (issue 24, hole 7): `.lock` a folder made every command fail with
    `IsADirectoryError: ... 3`."""
    assert cli("index", str(docs), "--embedding", "fake").code == 0
    lock = docs / INDEX / ".lock"
    lock.unlink()
    lock.mkdir()
    run = cli("search", str(docs), "retry")
    assert run.code == 5 and ".lock" in one_line_reason(run)
    run = cli("index", str(docs), "--json")
    assert run.code == 0, run.stderr
    assert any(".lock" in r for r in run.json()["repaired"])
    assert lock.is_file() and cli("search", str(docs), "retry").code == 0


@pytest.fixture
def nobody_folders() -> Iterator[tuple[Path, Path]]:
    """A documents folder owned by `nobody` and a warm-up copy, outside pytest's 0700
    temporary folder."""
    top = Path(tempfile.mkdtemp(prefix="kbgraph-nobody-"))
    try:
        folder, warm = write_docs(top / "docs", DOCS), write_docs(top / "warm", DOCS)
        if os.geteuid() == 0:
            top.chmod(0o755)
            for path in [folder, *folder.rglob("*")]:
                os.chown(path, 65534, 65534)
        yield folder, warm
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _as_nobody(folders: tuple[Path, Path], steps: list[list[Any]]) -> list[dict[str, Any]]:
    folder, warm = folders
    proc = subprocess.run(
        [sys.executable, "-m", "tests.faults._nobody_cli", str(warm), str(folder),
         json.dumps(steps)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=80,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def _reason(result: dict[str, Any]) -> str:
    return one_line_reason(Run(result["code"], result["stdout"], result["stderr"]))


def test_an_unreadable_generation_is_damage_that_a_plain_index_repairs(
    nobody_folders: tuple[Path, Path],
) -> None:
    """Regression (issue 24, hole 7): a generation its user could not read gave a bare
    PermissionError. (The model comes from the version before it.)"""
    _, index, search, validate, repair, again = _as_nobody(
        nobody_folders,
        [
            ["kbgraph", "index", "FOLDER", "--embedding", "fake", "--quiet"],
            ["write", "retry.md", "# Retry\n\nThe retry policy, edited.\n"],
            ["kbgraph", "index", "FOLDER", "--quiet"],
            ["chmod", "generation", "000"],
            ["kbgraph", "search", "FOLDER", "retry"],
            ["kbgraph", "stats", "FOLDER", "--validate"],
            ["kbgraph", "index", "FOLDER", "--json", "--quiet"],
            ["kbgraph", "search", "FOLDER", "retry", "--json"],
        ],
    )
    assert index["code"] == 0, index
    for failed in (search, validate):
        assert failed["code"] == 5, failed
        reason = _reason(failed)
        assert "cannot be read" in reason and "kbgraph index" in reason, reason
    assert repair["code"] == 0, repair
    assert json.loads(repair["stdout"])["embedded"] == 0
    assert again["code"] == 0 and json.loads(again["stdout"])["results"], again


def test_an_unreadable_index_folder_says_so(nobody_folders: tuple[Path, Path]) -> None:
    """Regression (issue 24, hole 7): an index folder its user could not read was said to
    have "no copy of meta.json"."""
    _, search, index, _, again = _as_nobody(
        nobody_folders,
        [
            ["kbgraph", "index", "FOLDER", "--embedding", "fake", "--quiet"],
            ["chmod", "index", "000"],
            ["kbgraph", "search", "FOLDER", "retry"],
            ["kbgraph", "index", "FOLDER"],
            ["chmod", "index", "700"],
            ["kbgraph", "index", "FOLDER", "--quiet"],
            ["kbgraph", "search", "FOLDER", "retry"],
        ],
    )
    for failed in (search, index):
        assert failed["code"] == 1, failed
        reason = _reason(failed)
        assert "cannot read the index folder" in reason and "chmod" in reason, reason
    assert again["code"] == 0, again


def _unsealed(folder: Path) -> None:
    """HISTORY without its checksum line (what an earlier kbgraph wrote, before format 2)."""
    path = folder / INDEX / "HISTORY"
    lines = path.read_text().splitlines()
    path.write_text("".join(f"{line}\n" for line in lines if not line.startswith("#")))


def _deleted(folder: Path) -> None:
    (folder / INDEX / "HISTORY").unlink()


@pytest.mark.parametrize("damage", [_unsealed, _deleted], ids=["no-checksum-line", "deleted"])
def test_history_that_lost_its_checksum_or_was_deleted_is_damage(versions3: Path, damage) -> None:  # type: ignore[no-untyped-def]
    """Regression (issue 35, hole 7): on a format-2 index, HISTORY without its checksum
    line (or deleted) was trusted, and the next `index` pruned kept versions (3 -> 2,
    3 -> 1). It is damage: exit 5 naming it, and a plain `index` rebuilds it from the
    generation folders, pruning nothing."""
    kept = _versions(versions3)
    damage(versions3)
    for command in (["stats"], ["versions"], ["restore", "2"]):
        run = cli(command[0], str(versions3), *command[1:])
        assert run.code == 5, (command, run.stderr)
        assert "HISTORY" in one_line_reason(run) and "kbgraph index" in one_line_reason(run)
    run = cli("index", str(versions3), "--json")  # nothing changed: nothing to publish
    assert run.code == 0, run.stderr
    assert any("HISTORY" in r for r in run.json()["repaired"]), run.json()["repaired"]
    assert _versions(versions3) == kept
    assert cli("stats", str(versions3), "--validate").code == 0
    assert cli("index", str(versions3), "--json").json()["repaired"] == []
