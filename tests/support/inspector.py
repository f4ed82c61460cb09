"""What the inspector's tests show: a knowledge base folder with the kinds of files the
Source view must number right (Markdown with CRLF and non-ASCII text, HTML markup, a
two-page PDF) and the files it must never serve (a secret, a link out of the folder), its
index (fake embeddings, no model), recorded runs (a real chat agent run, and the same run
with the ``overrulings`` and ``answer_check`` shapes of issue 20 added), and a ``kbgraph
eval`` report written by the real report writer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kbgraph.evals._records import ClaimVerdict, GoldSource, MetricResult, Passage, RowResult
from kbgraph.evals._report import summarize, write_report
from tests.unit.test_loaders import make_pdf

QUESTION = "How do I change the number of retries?"
RETRY_LINES = (3, 4)  # the lines of retry.md that answer QUESTION
DOCS = {
    "retry.md": (
        "# Retry policy\r\n\r\n"
        "The client retries failed requests with exponential backoff.\r\n"
        "Set `max_attempts` in `client.toml` to change the number of retries (default 5).\r\n"
    ),
    "auth/tokens.md": (
        "# Tokens\n\n"
        "Access tokens expire after one hour; refresh tokens after thirty days.\n"
        "Rotate the signing key with `kbgraph-auth rotate`.\n"
    ),
    "über/straße.md": "# Straßenverzeichnis\n\nDie Größe des Caches wird in Megabyte angegeben.\n",
    "glossary.html": (
        "<!doctype html>\n<html>\n<body>\n<h1>Glossary</h1>\n"
        "<p><b>Backoff</b>: the wait between two attempts.</p>\n"
        "<p><b>Jitter</b>: randomness added to the backoff.</p>\n</body>\n</html>\n"
    ),
    ".env": "SECRET_TOKEN=do-not-serve\n",
}
PDF_PAGES = [["Harbor operations guide"], ["Page two: the webhook secret rotates", "every 90 days"]]


def make_kb(root: Path, outside: Path | None = None, index_dir: Path | None = None) -> Path:
    """The folder, indexed with fake embeddings (in ``index_dir`` when given, else its own
    ``.kbgraph``). ``outside``: a file out of the folder that ``leak.md`` links to (the scan
    skips such a link; the inspector must not follow it)."""
    for rel, text in DOCS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    (root / "guide.pdf").write_bytes(make_pdf(PDF_PAGES))
    if outside is not None:
        outside.write_text("root:x:0:0:outside the knowledge base\n", encoding="utf-8")
        os.symlink(outside, root / "leak.md")
    from kbgraph.retrieval import KnowledgeBase

    with KnowledgeBase(root, embedding="fake", index_dir=index_dir) as kb:
        kb.index()
    return root


def record_runs(runs: Path, folder: Path) -> list[str]:
    """Two recorded runs over ``folder``: a real chat agent run, and a copy of it with an
    overruling and an answer check added. Returns their ids, the real one first."""
    from kbgraph.agents import chat_agent
    from kbgraph.graphs import RagSettings
    from kbgraph.graphs._recording import RUNS_ENV, list_runs, read_run, write_run

    before = os.environ.get(RUNS_ENV)
    os.environ[RUNS_ENV] = str(runs)
    try:
        settings = RagSettings(
            knowledge_bases=[{"name": folder.name, "folder": str(folder)}],
            embedding="fake",
            record_runs=True,
        )
        chat_agent.invoke({"messages": [("user", QUESTION)]}, context=settings)
    finally:
        if before is None:
            os.environ.pop(RUNS_ENV, None)
        else:
            os.environ[RUNS_ENV] = before
    real = list_runs(runs)[0]["id"]
    record = read_run(real, runs)
    write_run(with_issue_20_keys(record), runs)
    return [real, record_id_after(real)]


def record_id_after(run_id: str) -> str:
    return run_id[:-8] + "ffffffff"


def with_issue_20_keys(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the keys issue 20 adds to a run's state (not on this branch yet)."""
    state = json.loads(json.dumps(record["state"]))
    citations = state.get("rag_citations") or []
    evidence = citations[0]["chunk_id"] if citations else None
    state["rag_retrieval_debug"]["overrulings"] = [
        {
            "node": "decide_retrieve",
            "attempt": 0,
            "proposal": "no retrieval: small talk",
            "evidence": "a lexical probe found 'retries' in retry.md",
            "decision": "retrieve",
        }
    ]
    state["answer_check"] = {
        "score": 0.5,
        "judge": "offline",
        "claims": [
            {"text": "Set max_attempts in client.toml.", "supported": True, "citations": [1],
             "evidence": evidence},
            {"text": "The default is 7 retries.", "supported": False, "citations": [1],
             "evidence": None},
        ],
        "policy": "flag",
    }  # fmt: skip
    return {**record, "id": record_id_after(record["id"]), "state": state}


def make_eval_report(out: Path) -> Path:
    """A two-row report, as `kbgraph eval` writes it (one claim contradicted, one gold
    source missed)."""
    cited = Passage(1, "Set `max_attempts` in `client.toml`.", "retry.md", 3, 4, "c1", "kb", 0.9)
    other = Passage(2, "Access tokens expire after one hour.", "auth/tokens.md", 3, 3, "c2")
    claims = (
        ClaimVerdict("Set max_attempts in client.toml.", "supported", 0.97, (1,), (1,), "ok"),
        ClaimVerdict("The default is 7 retries.", "contradicted", 0.05, (1,), (1,), "5, not 7"),
    )
    gold = (GoldSource("retry.md", 3, 4), GoldSource("docs/missing.md", 1, 2))
    first = RowResult(
        "retry-1", QUESTION, "ok", answer="Set max_attempts [1]. The default is 7 retries [1].",
        passages=(cited, other), reference="Set max_attempts in client.toml (default 5).",
        gold_sources=gold, seconds=0.5,
        metrics={
            "faithfulness": MetricResult.scored("faithfulness", 0.51, claims=list(claims)),
            "context_recall": MetricResult.scored("context_recall", 0.5, source_recall=0.5),
            "context_precision": MetricResult.scored("context_precision", 1.0),
            "answer_relevance": MetricResult.scored("answer_relevance", 0.82),
        },
    )  # fmt: skip
    second = RowResult(
        "tokens-1", "How long do access tokens last?", "ok", answer="One hour [1].",
        passages=(other,), metrics={
            "faithfulness": MetricResult.scored("faithfulness", 0.93),
            "answer_relevance": MetricResult.scored("answer_relevance", 0.7),
        },
    )  # fmt: skip
    results = [first, second]
    write_report(out, results, summarize(results, dataset="inspector-test", judge="offline"))
    return out


__all__ = [
    "DOCS",
    "PDF_PAGES",
    "QUESTION",
    "RETRY_LINES",
    "make_eval_report",
    "make_kb",
    "record_id_after",
    "record_runs",
    "with_issue_20_keys",
]
