"""``kbgraph inspect`` as a command: what it says before it serves (the browser tests drive
the served app: tests/e2e/test_inspector_browser.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.langgraph_dev import offline_env

pytestmark = pytest.mark.e2e


def kbgraph(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kbgraph", *args],
        capture_output=True, text=True, env=offline_env(), timeout=120,
    )  # fmt: skip


def test_a_host_other_than_loopback_is_warned_about(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is on no interface here: the warning comes first, then the
    # bind fails, so nothing is ever exposed by this test.
    proc = kbgraph("inspect", str(tmp_path), "--host", "192.0.2.1", "--port", "0")
    assert proc.returncode == 2
    warning, failure = proc.stderr.strip().splitlines()
    assert warning.startswith("kbgraph inspect: warning: listening on 192.0.2.1: anyone")
    assert failure.startswith("kbgraph inspect: cannot listen on 192.0.2.1:0")
    assert proc.stdout == "", "no URL is printed for a server that does not run"


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = kbgraph("inspect", str(tmp_path), "--port", str(port))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"kbgraph inspect: cannot listen on 127.0.0.1:{port}")
    assert "pick another --port" in proc.stderr and "warning" not in proc.stderr
