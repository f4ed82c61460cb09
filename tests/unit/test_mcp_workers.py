"""``kbgraph mcp --workers N``'s refusals before anything starts, and how a worker's end
is described (the processes themselves: tests/integration/test_mcp_workers.py)."""

from __future__ import annotations

import signal
from pathlib import Path

from click.testing import CliRunner

from kbgraph.cli import main
from kbgraph.mcp._workers import describe_end


def _run(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["mcp", *args])
    return done.exit_code, " ".join(done.output.split())


def test_workers_and_stateless_need_http(tmp_path: Path) -> None:
    for option in (["--workers", "2"], ["--stateless"]):
        code, out = _run(str(tmp_path), "--embedding", "none", *option)
        assert code == 2 and "pass --http" in out, out


def test_several_workers_refuse_a_watcher_each(tmp_path: Path) -> None:
    code, out = _run(str(tmp_path), "--embedding", "none", "--http", "--workers", "3", "--watch")
    assert code == 2 and "would run 3 watchers" in out and "kbgraph watch" in out, out


def test_the_help_says_the_workers_are_stateless() -> None:
    code, out = _run("--help")
    assert code == 0 and "--workers INTEGER RANGE" in out and "stateless" in out


def test_a_workers_end_is_named() -> None:
    assert describe_end(-signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_end(3) == "exited with code 3"
