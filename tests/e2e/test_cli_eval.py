"""`kbgraph eval` as a user runs it: a batch killed halfway and resumed gives the results of
a batch never interrupted, whether its rows were scored in worker processes or threads; and
a row past --row-timeout fails alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import REPO, offline_env, venv_binary

pytestmark = pytest.mark.e2e

CONTEXT = (
    "Harbor retries calls to downstream providers. `max_attempts` counts the first call, so "
    "the default of 5 means one call and up to four retries. Other 4xx responses are never "
    "retried, because repeating the same request cannot succeed. Webhooks are signed with "
    "HMAC-SHA256 and retried 7 times over about 21 hours."
)
ANSWERS = (
    "Harbor makes {n} attempts by default [1]. Webhooks are signed with HMAC-SHA256 [1].",
    "A 404 response is {neg}retried [1]. Webhooks are retried {n} times [1].",
)


def _dataset(path: Path, rows: int) -> Path:
    lines = []
    for i in range(rows):
        answer = ANSWERS[i % 2].format(n=5 + i % 3, neg="never " if i % 4 else "")
        lines.append(
            json.dumps(
                {
                    "id": f"q{i:03d}",
                    "question": "How does Harbor retry?",
                    "answer": answer,
                    "contexts": [CONTEXT],
                    "reference": "Harbor makes 5 attempts by default.",
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _eval(*args: str) -> list[str]:
    return [str(venv_binary("kbgraph")), "eval", *args, "--embedding", "fake", "--quiet"]


def _rows(out: Path) -> dict[str, dict[str, object]]:
    rows = {}
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row.pop("seconds")
        rows[row["id"]] = row
    return rows


def test_a_killed_batch_resumes_to_the_same_results(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "rows.jsonl", 240)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    env = offline_env()
    done = subprocess.run(
        _eval(str(data), "--out", str(whole), "--concurrency", "1"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    # Processes score this run (--concurrency 2, enough rows); it is killed once rows land.
    run = subprocess.Popen(
        _eval(str(data), "--out", str(cut), "--concurrency", "2"),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    results = cut / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None:
        if results.is_file() and len(results.read_text(encoding="utf-8").splitlines()) >= 20:
            break
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    kept = len(results.read_text(encoding="utf-8").splitlines())
    assert 20 <= kept < 240, kept
    assert not (cut / "summary.json").exists()

    resumed = subprocess.run(
        _eval(str(data), "--out", str(cut), "--concurrency", "1", "--resume", "--json"),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["resumed_rows"] >= 20
    assert _rows(cut) == _rows(whole)
    before = json.loads((whole / "summary.json").read_text(encoding="utf-8"))
    after = json.loads((cut / "summary.json").read_text(encoding="utf-8"))
    for key in ("faithfulness", "answer_correctness", "per_row", "rows", "dataset_fingerprint"):
        assert after[key] == before[key], key


def test_a_row_past_its_time_limit_fails_alone(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "rows.jsonl", 3)
    long_answer = " ".join(f"Harbor retries {n} times on Tuesday {n}." for n in range(3000))
    rows = (data.read_text(encoding="utf-8")).splitlines()
    slow = json.loads(rows[1])
    slow["answer"] = long_answer
    # Within the judge's input bounds (evals/_bounds.py: answers and each passage cut to
    # 20,000 characters) the row must still take longer than its second: a long context too.
    slow["contexts"] = [long_answer[:20_000].replace("Harbor", f"Port{k}") for k in range(20)]
    rows[1] = json.dumps(slow)
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.run(
        _eval(str(data), "--out", str(out), "--row-timeout", "1"),
        cwd=REPO,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    statuses = {r["id"]: (r["status"], r["error"]) for r in _rows(out).values()}
    assert statuses["q000"] == ("ok", None) and statuses["q002"] == ("ok", None)
    assert statuses["q001"] == (
        "failed",
        "scoring did not finish within the row's 1.0 seconds (--row-timeout)",
    )
