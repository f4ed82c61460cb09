"""``make docs`` installs the docs extra once and never reinstalls the package when
pyproject.toml changes (issue 43: its stamp followed pyproject.toml through the full
install, so every edit of it made ``make docs`` run pip). Read with ``make -n`` (what make
would run) on a copy of the Makefile, nothing run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def _plan(tmp_path: Path, *stamps: str) -> str:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("", "utf-8")
    for stamp in stamps:
        (tmp_path / ".venv" / stamp).write_text("", "utf-8")
    (tmp_path / "pyproject.toml").write_text("", "utf-8")
    later = (tmp_path / "pyproject.toml").stat().st_mtime + 60
    os.utime(tmp_path / "pyproject.toml", (later, later))  # edited after every stamp
    done = subprocess.run(
        ["make", "-n", "docs"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_docs_does_not_reinstall_after_a_pyproject_edit(tmp_path: Path) -> None:
    plan = _plan(tmp_path, ".installed-local", ".installed", ".installed-docs")
    assert "pip install" not in plan
    assert "sphinx-build" in plan


def test_docs_on_a_fresh_venv_installs_the_docs_extra_alone(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    installs = [line for line in plan.splitlines() if "pip install -e" in line]
    assert installs and all('".[docs]"' in line for line in installs)
