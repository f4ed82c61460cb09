"""The CLI sends OpenBLAS's idle threads to sleep at once (kbgraph/_blas_env.py): set before
numpy loads OpenBLAS (it reads the variable then, never again), a user's own value kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# A finder that records the variable at the moment numpy's import starts, then steps aside.
_CHILD = """
import json, os, sys
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and "at_numpy" not in seen:
            seen["at_numpy"] = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
        return None
sys.meta_path.insert(0, Watch())
import kbgraph.cli
import numpy  # a command loads it later (a search's arrays): the variable is set by then
print(json.dumps({"at_numpy": seen.get("at_numpy", "numpy never loaded")}))
"""


def _at_numpy(**env: str) -> object:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["at_numpy"]


def test_the_cli_sets_openblas_thread_timeout_before_numpy_loads() -> None:
    assert _at_numpy() == "4"


def test_a_thread_timeout_the_user_set_is_kept() -> None:
    assert _at_numpy(OPENBLAS_THREAD_TIMEOUT="12") == "12"
