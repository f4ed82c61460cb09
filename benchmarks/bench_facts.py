"""Does the answer state the fact? Every question of a data set runs through the chat agent
(by default without a chat model: the extractive answer) exactly as ``kbgraph eval`` runs it,
and is scored by the offline judge (answer correctness against the reference); then each
answer is checked for the question's *key string*: the fact it must state, a few words or a
code line the documents hold verbatim ("five seconds", ``http2=True``).

A key is found when one of its alternatives occurs in the answer once both are reduced the
same way: case folded, Markdown/reStructuredText emphasis and code marks (`` ` ``, ``*``)
and table bars removed, whitespace collapsed. Keys come from a row's ``metadata.key``
(a string or a list of alternatives) or, by row id, from ``--keys`` (JSON lines of
``{"id": ..., "key": [...]}``); a row without a key is not counted.

    python benchmarks/bench_facts.py                      # bundled questions + their keys
    python benchmarks/bench_facts.py --kb ../shared/data/corpora/httpx-docs \\
        --dataset benchmarks/questions/httpx_facts.jsonl
    python benchmarks/bench_facts.py --quick               # 2 questions, the fake model

The folder is copied to a temporary directory first, so no index is written beside the
documents. Prints one line of figures and the questions whose answer misses its key.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _quick import parse

from kbgraph.agents import ChatAgent
from kbgraph.evals import EvalRow, bundled_dataset_path, load_dataset
from kbgraph.evals._batch import run_evaluation

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_KEYS = ROOT / "benchmarks" / "questions" / "examples_docs_facts.jsonl"
_MARKS = re.compile(r"[`*|]")


def reduced(text: str) -> str:
    return " ".join(_MARKS.sub(" ", text).casefold().split())


def states(answer: str, key: list[str]) -> bool:
    flat = reduced(answer)
    return any(reduced(k) in flat for k in key)


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value or []]


def load_keys(path: Path | None) -> dict[str, list[str]]:
    if path is None:
        return {}
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return {str(row["id"]): _as_list(row["key"]) for row in rows}


def keys_for(rows: Sequence[EvalRow], path: Path | None) -> dict[str, list[str]]:
    """Each row's key: from ``path`` by row id, else from its ``metadata.key``."""
    keys = load_keys(path)
    for row in rows:
        if row.id not in keys and row.metadata.get("key"):
            keys[row.id] = _as_list(row.metadata["key"])
    return keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=Path, default=ROOT / "examples" / "docs")
    parser.add_argument("--dataset", type=Path, default=None, help="default: the bundled set")
    parser.add_argument("--keys", type=Path, default=None, help="default: the bundled keys")
    parser.add_argument("--embedding", default="local")
    parser.add_argument("--chat-model", default=None, help="default: none (extractive)")
    parser.add_argument("--out", type=Path, default=None, help="keep the eval report here")
    args = parse(parser, embedding="fake")
    dataset = args.dataset or bundled_dataset_path()
    keys_file = args.keys or (BUNDLED_KEYS if args.dataset is None else None)
    rows = load_dataset(dataset)[: 2 if args.quick else None]
    keys = keys_for(rows, keys_file)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "kb"
        shutil.copytree(args.kb, folder, ignore=shutil.ignore_patterns(".kbgraph"))
        out = args.out or Path(tmp) / "report"
        outcome = run_evaluation(
            rows,
            out_dir=out,
            folder=folder,
            agent_factory=ChatAgent.prepared,
            judge="offline",
            embedding=args.embedding,
            chat_model=args.chat_model,
            dataset=str(dataset),
        )
    correctness = [
        r.metrics["answer_correctness"].score
        for r in outcome.results
        if "answer_correctness" in r.metrics and r.metrics["answer_correctness"].score is not None
    ]
    keyed = [r for r in outcome.results if r.row_id in keys]
    missed = [r for r in keyed if not states(r.answer or "", keys[r.row_id])]
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"dataset {dataset.name} over {args.kb.name} (commit {commit}): "
        f"answer_correctness {statistics.fmean(correctness):.3f} ({len(correctness)} scored); "
        f"states the fact {len(keyed) - len(missed)}/{len(keyed)}"
    )
    for r in missed:
        print(f"  missed {r.row_id}: key {keys[r.row_id]!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
