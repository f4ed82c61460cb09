"""Reading a data set in the BEIR layout (Thakur et al., "BEIR: A Heterogeneous Benchmark
for Zero-shot Evaluation of Information Retrieval Models", NeurIPS 2021 Datasets track):

    <dir>/corpus.jsonl        {"_id", "title", "text", ...}, one document per line
    <dir>/queries.jsonl       {"_id", "text", ...}, one query per line
    <dir>/qrels/<split>.tsv   query-id <TAB> corpus-id <TAB> score, with a header line

Some copies keep only the test queries in ``queries.jsonl`` and every query (train + test)
in ``queries_all.jsonl``; both files are read when present (``query_files`` narrows that:
tuning reads ``queries_all.jsonl`` only, so no test file is opened), and the split's qrels
decide which queries are run.

A query of the qrels with no text cannot be run; it stays in ``qrels`` and scores 0, as
trec_eval ``-c`` and BEIR count every judged query, so a data set with missing query text
is not scored as if those queries were easy.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgraph.errors import ConfigError

QUERY_FILES = ("queries.jsonl", "queries_all.jsonl")


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class BeirData:
    """One split of a BEIR data set. ``qrels[qid][doc_id]`` is the graded relevance of every
    query of the split; ``queries`` holds those of them that have text (in qrels order);
    ``missing_queries`` counts the split's query ids with no text in any query file (they
    are scored 0, see the module docstring)."""

    name: str
    split: str
    corpus: dict[str, Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    missing_queries: int = 0
    files: dict[str, str] = field(default_factory=dict)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(
                    f"{path}:{number} is not valid JSON ({exc.msg}); BEIR files hold one "
                    "JSON object per line"
                ) from None
            if not isinstance(row, dict) or "_id" not in row:
                raise ConfigError(
                    f'{path}:{number} has no "_id"; BEIR rows look like '
                    '{"_id": "...", "title": "...", "text": "..."}'
                )
            yield row


def load_corpus(path: Path) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for row in _jsonl(path):
        doc_id = str(row["_id"])
        corpus[doc_id] = Document(doc_id, str(row.get("title") or ""), str(row.get("text") or ""))
    return corpus


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: score}}``; the header line is skipped when its score column is
    not a number."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), 1):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise ConfigError(
                    f"{path}:{number} has {len(row)} columns; qrels lines are "
                    "query-id<TAB>corpus-id<TAB>score"
                )
            try:
                score = int(float(row[2]))
            except ValueError:
                if number == 1:
                    continue  # the header: query-id corpus-id score
                raise ConfigError(
                    f"{path}:{number}: score {row[2]!r} is not a number; qrels scores are "
                    "graded relevance values such as 0, 1, 2"
                ) from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = score
    return qrels


def load_queries(folder: Path, files: Sequence[str] = QUERY_FILES) -> dict[str, str]:
    """Every query of ``files`` that exist in ``folder`` (the first file wins)."""
    queries: dict[str, str] = {}
    for name in files:
        path = folder / name
        if path.is_file():
            for row in _jsonl(path):
                queries.setdefault(str(row["_id"]), str(row.get("text") or ""))
    return queries


def load_beir(
    folder: str | Path, split: str = "test", *, query_files: Sequence[str] = QUERY_FILES
) -> BeirData:
    """The corpus, the queries and the qrels of ``split``; query texts come from
    ``query_files``. Raises ``ConfigError`` naming the missing file when the folder is not
    in the BEIR layout."""
    root = Path(folder).expanduser()
    corpus_path, qrels_path = root / "corpus.jsonl", root / "qrels" / f"{split}.tsv"
    for path in (corpus_path, qrels_path):
        if not path.is_file():
            splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
            raise ConfigError(
                f"{path} not found; a BEIR folder holds corpus.jsonl, queries.jsonl and "
                f"qrels/<split>.tsv (splits here: {', '.join(splits) or 'none'})"
            )
    if not any((root / name).is_file() for name in query_files):
        raise ConfigError(
            f"{root} has none of {', '.join(query_files)}; a BEIR folder needs its queries"
        )
    qrels = load_qrels(qrels_path)
    texts = load_queries(root, query_files)
    queries = {qid: texts[qid] for qid in qrels if texts.get(qid, "").strip()}
    if not queries:
        raise ConfigError(
            f"none of the {len(qrels)} queries of {qrels_path} has text in "
            f"{' or '.join(query_files)}; check that the split matches the query file"
        )
    return BeirData(
        name=root.resolve().name,
        split=split,
        corpus=load_corpus(corpus_path),
        queries=queries,
        qrels=qrels,
        missing_queries=len(qrels) - len(queries),
        files={
            "corpus": str(corpus_path),
            "qrels": str(qrels_path),
            "queries": ",".join(
                str(root / name) for name in query_files if (root / name).is_file()
            ),
        },
    )


__all__ = [
    "QUERY_FILES",
    "BeirData",
    "Document",
    "load_beir",
    "load_corpus",
    "load_qrels",
    "load_queries",
]
