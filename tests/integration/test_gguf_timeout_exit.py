"""A GGUF call that times out mid-generation, then the process exits at once: it must exit
cleanly. Before the fix the generation went on in a daemon thread inside llama.cpp, and the
interpreter's exit ended that thread with pthread_exit; llama.cpp's ``catch (...)`` swallowed
the forced unwind and glibc aborted (exit 134, stderr ``FATAL: exception not rethrown``) --
how `kbgraph ask --chat-model gguf:...` died on a busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gguf import smollm2_path

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys
from kbgraph.graphs._chat_models import ChatGGUF

model = ChatGGUF(model_path=sys.argv[1], n_ctx=512, max_tokens=400, timeout=0.3)
try:
    model.invoke("Write a long story about a harbor, with many details.")
except TimeoutError:
    print("timed out")
"""


def test_a_timed_out_generation_does_not_crash_the_process_at_exit() -> None:
    path = smollm2_path()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )  # fmt: skip
    assert "FATAL" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "timed out"
