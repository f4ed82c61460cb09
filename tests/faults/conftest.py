"""The fault matrix: hostile folders, damaged indexes and misbehaving providers, each case
bounded by a timeout. The CLI runs in-process (click's runner: exit code and stderr as a
user sees them) except where a hang is the fault under test, which runs in a real process
with a deadline."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbgraph.cli import main

ROOT = Path(__file__).resolve().parents[2]
INDEX = ".kbgraph"

DOCS = {
    "retry.md": "# Retry\n\nThe retry policy backs off exponentially between attempts.\n",
    "auth/tokens.md": "# Tokens\n\nTokens expire hourly; the retry of a refresh waits.\n",
    "notes/東京.txt": "東京の天気は晴れです。\r\nThe Tokyo office handles retry billing.\r\n",
    "code/client.py": "def retry(call):\n    # retry with backoff\n    return call()\n",
}


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def cli(*args: str) -> Run:
    """``kbgraph ARGS`` in this process; stderr apart from stdout."""
    result = CliRunner().invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def cli_process(*args: str, timeout: float = 60.0) -> Run:
    """``kbgraph ARGS`` as a real process that must finish within ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "kbgraph", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def one_line_reason(run: Run) -> str:
    """The failure's reason: exactly one line on stderr, ``kbgraph: ...``, after the
    progress bars (which redraw themselves with carriage returns)."""
    lines = run.stderr.rsplit("\r", 1)[-1].strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("kbgraph: "), run.stderr
    return lines[0]


def write_docs(folder: Path, docs: dict[str, str | bytes] | None = None) -> Path:
    for rel, text in (docs or DOCS).items():  # type: ignore[union-attr]
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every document (the index folder left out): the folder must not change."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel == INDEX or rel.startswith(INDEX + "/"):
            continue
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir" if path.is_dir() else "other"
    return out


def generation(folder: Path) -> Path:
    """The live generation folder, read from CURRENT (before any damage to it)."""
    index = folder / INDEX
    return index / (index / "CURRENT").read_text().strip()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs")


def make_read_only(top: Path) -> None:
    """Every folder 0555 and file 0444 under ``top`` (a mounted snapshot, another user's
    shared folder): readable by anyone, writable by no one but root."""
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)


def cli_on_read_only_mount(folder: Path, *args: str, timeout: float = 60.0) -> Run:
    """``kbgraph ARGS`` with ``folder`` mounted read-only (a snapshot, a read-only network
    share)."""
    return python_on_read_only_mount(folder, "-m", "kbgraph", *args, timeout=timeout)


def python_on_read_only_mount(folder: Path, *args: str, timeout: float = 60.0) -> Run:
    """``python ARGS`` with ``folder`` mounted read-only. Root ignores file modes, so as
    root the folder is bind-mounted read-only in a private mount namespace (``unshare``);
    otherwise its modes are made read-only."""
    if os.geteuid() != 0:
        make_read_only(folder)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a folder read-only as root")
    quoted = shlex.quote(str(folder))
    command = " ".join(shlex.quote(a) for a in (sys.executable, *args))
    script = (
        f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted} "
        f"&& touch {quoted}/.probe 2>/dev/null && exit 99; exec {command}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode == 99 or "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"cannot mount read-only here: {proc.stderr.strip()[:200]}")
    return Run(proc.returncode, proc.stdout, proc.stderr)
