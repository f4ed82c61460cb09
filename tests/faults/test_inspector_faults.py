"""The inspector as a hostile web page, a careless user and a broken disk would meet it:
a DNS name rebound to 127.0.0.1 gets nothing (the command's server and the app mounted in
``langgraph dev``, both real uvicorn servers on loopback), a GET never writes, a file grown
huge is not read whole, and a FIFO or an ill-typed record in the runs or eval folders is
skipped, never a hang or a 500."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from kbgraph.inspector import InspectorConfig, create_app
from tests.faults.conftest import ROOT
from tests.support.inspector import QUESTION, make_eval_report, make_kb
from tests.support.langgraph_dev import free_port, offline_env

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

BASE = "http://127.0.0.1"
RUN_ID = "20261126T101500-0a1b2c3d"
FIFO_ID = "20261126T101501-0a1b2c3e"


def _env(**extra: str) -> dict[str, str]:
    return offline_env(PYTHONPATH=str(ROOT), **extra)


def _first_line(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> str:
    """The first line ``proc`` prints on stdout, within ``timeout`` seconds."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise AssertionError(f"no line from {proc.args!r} in {timeout}s")
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            raise AssertionError(f"{proc.args!r} ended: {proc.stderr and proc.stderr.read()!r}")
        line += byte
    return line.decode().strip()


def _stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int | None:
    """SIGTERM, then the exit code; None (after SIGKILL) when it ignored SIGTERM."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


@contextmanager
def inspect_server(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``kbgraph inspect ARGS --port 0`` as a real process; its port."""
    command = [sys.executable, "-m", "kbgraph", "inspect", *args, "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        url = _first_line(proc)
        yield proc, int(url.rstrip("/").rsplit(":", 1)[1])
    finally:
        if proc.poll() is None:
            _stop(proc)


def get(
    port: int,
    path: str,
    host: str | None = None,
    *,
    address: str = "127.0.0.1",
    method: str = "GET",
    body: str | None = None,
    timeout: float = 30.0,
) -> tuple[int, str]:
    """One real HTTP request to ``address:port`` with the given Host header."""
    conn = http.client.HTTPConnection(address, port, timeout=timeout)
    headers = {"Host": host or f"127.0.0.1:{port}"}
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def kb_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_kb(tmp_path_factory.mktemp("inspector-faults") / "docs")


def _index_state(folder: Path) -> dict[str, Any]:
    """Every path of the index folder with its size and mtime, and CURRENT."""
    index = folder / ".kbgraph"
    if not index.exists():
        return {}
    files = {
        p.relative_to(index).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in index.rglob("*")
    }
    return {"files": files, "current": (index / "CURRENT").read_text()}


# -- 1. DNS rebinding ------------------------------------------------------------------
REBOUND = ["127.0.0.1.rebind.example", "127.evil.com", "127.0.0.1.nip.io", "localhost.evil",
           "[::1].evil", "127.0.0.1:80:80", "evil.example"]  # fmt: skip


def test_a_dns_name_rebound_to_loopback_reads_nothing_and_restores_nothing(
    kb_folder: Path,
) -> None:
    from kbgraph.retrieval import KnowledgeBase

    (kb_folder / "later.md").write_text("# Later\n\nAdded for a second version.\n")
    with KnowledgeBase(kb_folder, embedding="fake") as kb:
        kb.index()
        old = kb.versions()[1].name
    before = _index_state(kb_folder)
    with inspect_server(str(kb_folder), "--embedding", "fake") as (_proc, port):
        for name in REBOUND:
            for host in (name, f"{name}:{port}"):
                status, text = get(port, "/api/source/docs/retry.md", host)
                assert status == 421, (host, status, text[:200])
                assert "max_attempts" not in text
        status, _ = get(port, f"/index/docs/restore?generation={old}", f"127.evil.com:{port}")
        assert status == 421, "the confirmation page (and its token) is not served"
        status, page = get(port, f"/index/docs/restore?generation={old}")
        token = re.search(r'name="token" value="([^"]+)"', page)
        assert status == 200 and token
        form = f"generation={old}&token={token[1]}"
        status, _ = get(port, "/index/docs/restore", f"127.0.0.1.rebind.example:{port}",
                        method="POST", body=form)  # fmt: skip
        assert status == 421, "even the right token from another name changes nothing"
        assert _index_state(kb_folder) == before
        for host in ("127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}",
                     f"LOCALHOST:{port}"):  # fmt: skip
            assert get(port, "/api/source/docs/retry.md", host)[0] == 200, host


def test_the_address_it_was_bound_to_is_answered_and_allow_host_adds_a_name(
    kb_folder: Path,
) -> None:
    # 127.0.0.2 is loopback on Linux (all of 127/8), so nothing is exposed.
    args = (str(kb_folder), "--embedding", "fake", "--host", "127.0.0.2")
    with inspect_server(*args, "--allow-host", "kb.lan") as (_proc, port):
        assert get(port, "/index", f"127.0.0.2:{port}", address="127.0.0.2")[0] == 200
        assert get(port, "/index", f"kb.lan:{port}", address="127.0.0.2")[0] == 200
        assert get(port, "/index", f"kb.lan.evil:{port}", address="127.0.0.2")[0] == 421
        assert get(port, "/index", f"127.0.0.3:{port}", address="127.0.0.2")[0] == 421


def test_the_app_mounted_in_langgraph_dev_refuses_a_rebound_name(kb_folder: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "kbgraph.inspector._http_app:app",
               "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]  # fmt: skip
    env = _env(KBGRAPH_INSPECT_FOLDERS=str(kb_folder), KBGRAPH_EMBEDDING="fake")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _ = get(port, "/kbgraph/inspect/index", timeout=5)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)
        assert status == 200
        for host in ("127.0.0.1.rebind.example", "127.evil.com"):
            status, text = get(port, "/kbgraph/inspect/api/source/docs/retry.md", f"{host}:{port}")
            assert status == 421 and "max_attempts" not in text, host
    finally:
        _stop(proc)


# -- 2. a GET never writes -----------------------------------------------------------
def test_a_search_never_indexes_nor_prunes_a_stale_folder(tmp_path: Path) -> None:
    folder = make_kb(tmp_path / "docs")
    (folder / "new.md").write_text("# New\n\nHow do I change the number of retries? Ask.\n")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "a.md").write_text("# A\n\nretries\n")
    before = _index_state(folder)
    config = InspectorConfig.from_folders([folder, bare], embedding="fake")
    with TestClient(create_app(config), base_url=BASE) as client:
        data = client.get("/api/search", params={"q": QUESTION, "kb": "docs"}).json()
        page = client.get("/search", params={"q": QUESTION, "kb": "docs"})
        # What an <img src> in any page makes a browser do, for both folders.
        assert client.get("/search", params={"q": "retries"}).status_code == 200
    assert _index_state(folder) == before, "a GET wrote to the index"
    assert not (bare / ".kbgraph").exists(), "a GET created an index"
    assert data["results"], "the stale index is searched as it is"
    assert data["freshness"] == [
        {"kb": "docs", "indexed": True, "stale": 1, "rebuild": False,
         "text": f"docs is stale: 1 file(s) changed since the last run; searched as it is; "
                 f"run `kbgraph index {folder}` to update it"},
    ]  # fmt: skip
    assert page.status_code == 200 and "docs is stale: 1 file(s) changed" in page.text


# -- 9. bounded source view, defensive records ----------------------------------------
def test_the_source_view_reads_no_more_than_an_indexed_file_may_hold(tmp_path: Path) -> None:
    from kbgraph.retrieval import KnowledgeBase
    from kbgraph.retrieval._config import ScanConfig

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "grows.md").write_text("# Grows\n\nretry line\n")
    (folder / "long.md").write_text("".join(f"line {n} retry\n" for n in range(1, 20_001)))
    with KnowledgeBase(folder, embedding="fake", scan=ScanConfig(max_file_bytes=400_000)) as kb:
        kb.index()
    with (folder / "grows.md").open("a") as handle:  # grown past the limit since indexing
        handle.write("retry again\n" * 200_000)
    config = InspectorConfig.from_folders([folder], embedding="fake")
    with TestClient(create_app(config), base_url=BASE) as client:
        grown = client.get("/api/source/docs/grows.md")
        assert grown.status_code == 403 and "max_file_bytes 400000" in grown.text
        assert len(grown.content) < 10_000
        page = client.get("/source/docs/long.md", params={"lines": "15000"})
        assert page.status_code == 200 and 'id="L15000"' in page.text
        assert 'id="L1"' not in page.text and 'id="L20000"' not in page.text
        assert "of 20000 lines" in page.text
        assert len(page.content) < 1_000_000
        data = client.get("/api/source/docs/long.md", params={"lines": "3"}).json()
        assert data["firstLine"] == 1 and data["totalLines"] == 20_000
        assert len(data["lines"]) < 20_000 and data["lines"][2] == "line 3 retry"


def _record(run_id: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "kbgraph.run", "format": 1, "id": run_id, "graph": "chat_agent",
            "created": "2026-11-26T10:15:00+00:00", "question": "q?", "knowledge_bases": [],
            "settings": {}, "state": {"answer": "a"}, **fields}  # fmt: skip


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_fifo_in_the_runs_folder_hangs_nothing(tmp_path: Path, kb_folder: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    _write_json(runs / f"{RUN_ID}.json", _record(RUN_ID))
    os.mkfifo(runs / f"{FIFO_ID}.json")
    report = make_eval_report(tmp_path / "evals" / "run")
    (report / "summary.json").unlink()
    os.mkfifo(report / "summary.json")
    (tmp_path / "evals" / "pipe").mkdir()
    os.mkfifo(tmp_path / "evals" / "pipe" / "results.jsonl")
    args = (str(kb_folder), "--embedding", "fake", "--runs", str(runs), "--eval",
            str(tmp_path / "evals"))  # fmt: skip
    with inspect_server(*args) as (proc, port):
        status, text = get(port, "/api/evals", timeout=20)
        assert status == 200 and [r["slug"] for r in json.loads(text)["reports"]] == ["run"]
        assert get(port, "/evals/run", timeout=20)[0] == 200
        status, text = get(port, "/api/runs", timeout=20)
        assert status == 200 and [r["id"] for r in json.loads(text)["runs"]] == [RUN_ID]
        assert get(port, "/runs", timeout=20)[0] == 200
        status, text = get(port, f"/api/runs/{FIFO_ID}", timeout=20)
        assert status == 400 and "not a regular file" in text
        assert _stop(proc) is not None, "the server ignored SIGTERM"


BAD_RECORDS = {
    "20261126T101502-00000001": [1, 2],
    "20261126T101503-00000002": _record("x", state=[1, 2]),
    "20261126T101504-00000003": _record("y", knowledge_bases=[1, "a"], question={"q": 1}),
    "20261126T101505-00000004": _record(
        "z",
        state={
            "rag_retrieval_debug": [1],
            "rag_citations": {"a": 1},
            "messages": 7,
            "answer_check": {"claims": [1]},
            "answer_citations": [[1]],
        },
    ),
}


def test_an_ill_typed_run_record_is_skipped_or_shown_as_bad_never_a_500(
    tmp_path: Path, kb_folder: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    _write_json(runs / f"{RUN_ID}.json", _record(RUN_ID))
    for run_id, data in BAD_RECORDS.items():
        _write_json(runs / f"{run_id}.json", data)
    config = InspectorConfig.from_folders([kb_folder], runs=runs, embedding="fake")
    app = create_app(config)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        listed = client.get("/api/runs")
        assert listed.status_code == 200
        assert RUN_ID in [r["id"] for r in listed.json()["runs"]]
        assert client.get("/runs").status_code == 200
        for run_id in BAD_RECORDS:
            for path in (f"/runs/{run_id}", f"/api/runs/{run_id}"):
                assert client.get(path).status_code in (200, 400), path


def test_an_ill_typed_eval_row_is_shown_as_bad_never_a_500(tmp_path: Path, kb_folder: Path) -> None:
    report = make_eval_report(tmp_path / "evals" / "run")
    with (report / "results.jsonl").open("a", encoding="utf-8") as handle:
        for row in ([1, 2], "text", {"id": "m", "metrics": [1]},
                    {"id": "s", "metrics": {"faithfulness": {"status": "scored", "score": "x"}}},
                    {"id": "c", "citations": {"a": 1}, "gold_sources": [1]}):  # fmt: skip
            handle.write(json.dumps(row) + "\n")
    _write_json(report / "summary.json", [1, 2])
    config = InspectorConfig.from_folders([kb_folder], evals=[tmp_path / "evals"], embedding="fake")
    with TestClient(create_app(config), base_url=BASE, raise_server_exceptions=False) as client:
        assert client.get("/evals").status_code == 200
        view = client.get("/api/evals/run")
        assert view.status_code == 200 and view.json()["bad_rows"] == 2
        ids = [r["id"] for r in view.json()["rows"]]
        assert ids[:2] == ["retry-1", "tokens-1"] and {"m", "s", "c"} <= set(ids)
        assert client.get("/evals/run").status_code == 200
        for row_id in ("retry-1", "m", "s", "c"):
            for path in (f"/evals/run/rows/{row_id}", f"/api/evals/run/rows/{row_id}"):
                assert client.get(path).status_code in (200, 400), path
