"""``results.jsonl`` written as a run goes: each row's result is appended (and flushed) as soon
as the row is done, so that a run that is killed keeps every row it finished, and
``kbgraph eval --resume`` runs only the rest.

``run.json`` beside it says which rows and which judge the results are of (the data set's
fingerprint, ``report.dataset_fingerprint``): a resumed run must be of the same rows and
judge, or its summary would mix two runs. A line cut short by the kill is skipped, and so
are failed rows: both run again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbgraph.errors import DatasetError

from ._records import RowResult

RESULTS = "results.jsonl"
MANIFEST = "run.json"


class ResultsLog:
    """The results file of a run in ``out_dir``, appended to row by row."""

    def __init__(self, out_dir: Path, about: Mapping[str, Any]) -> None:
        self.out_dir = out_dir
        self.about = dict(about)  # {"dataset_fingerprint", "judge", ...}
        self.path = out_dir / RESULTS
        self._lock = threading.Lock()

    def start(self, *, resume: bool) -> dict[str, RowResult]:
        """Open the log: empty for a new run; for ``resume``, the rows already done
        (ok rows of the same data set and judge), which are kept in the file."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        done = self._done() if resume else {}
        lines = [json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in done.values()]
        self.path.write_text("".join(lines), encoding="utf-8", newline="\n")
        (self.out_dir / MANIFEST).write_text(
            json.dumps(self.about, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        return done

    def append(self, row: RowResult) -> None:
        line = json.dumps(row.to_dict(), ensure_ascii=False) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8", newline="\n") as handle:
            handle.write(line)
            handle.flush()

    def _done(self) -> dict[str, RowResult]:
        manifest = self.out_dir / MANIFEST
        if not self.path.is_file():
            return {}
        if not manifest.is_file():
            raise DatasetError(
                f"{self.path} has no {MANIFEST} beside it, so it cannot be told which rows and "
                "judge it holds; drop --resume to start over, or use another --out."
            )
        before = json.loads(manifest.read_text(encoding="utf-8"))
        for key, label in (("dataset_fingerprint", "rows"), ("judge", "judge")):
            if before.get(key) != self.about.get(key):
                raise DatasetError(
                    f"{self.out_dir} holds results of other {label} ({key} "
                    f"{before.get(key)!r}, this run {self.about.get(key)!r}); --resume needs "
                    "the same data set, --limit and --judge. Drop --resume to start over, or "
                    "use another --out."
                )
        done: dict[str, RowResult] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = RowResult.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short when the run was killed: that row runs again
            if row.status == "ok":
                done[row.row_id] = row
        return done


__all__ = ["MANIFEST", "RESULTS", "ResultsLog"]
