"""Readers for the held-out test sets (``../shared/data/heldout``) and the published figures
("anchors") each is reported beside.

These are TEST sets written and labelled by nobody on this project: read them to report a
finished judge, never to fit a rule, threshold, weight or training example to them. Every
row of ``rows.jsonl`` is ``{"id", "context", "answer", "faithful", "task"}``; the folder's
``meta.jsonl`` gives each id's ``question`` (when it has one), which the judge is handed as
a user's answer check would be. Nothing else of ``meta.jsonl`` is read (it holds the
annotated spans).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ._benchmarks import Labelled
from ._datasets import DatasetError

HELDOUT_ENV = "KBGRAPH_HELDOUT_DATA"
RAGTRUTH_TASKS = ("QA", "Summary", "Data2txt")
ATTRIBUTIONBENCH_SUBSETS = (
    "ExpertQA", "Stanford-GenSearch", "AttributedQA", "LFQA",
    "HAGRID", "BEGIN", "AttrScore-GenSearch",
)  # fmt: skip
"""The release's in-distribution test subsets, then its out-of-distribution ones."""
SUMMAC_SUBSETS = ("factcc", "polytope", "summeval", "xsumfaith")
"""SummaC's benchmark test files (``summac/<name>.json``), in the paper's order."""
SUMMAC_MACRO = "macro over the 4 subsets"
FAITHBENCH_SPLIT = "summaries"
FAITHBENCH_UNFAITHFUL = "Unwanted"
"""FaithBench's worst label that makes a summary unfaithful; "Benign" (a true addition),
"Questionable" and "Consistent" summaries are faithful, as the issue counts them (315 of
800)."""


def default_heldout_dir() -> Path:
    """``$KBGRAPH_HELDOUT_DATA``, else ``../shared/data/heldout`` beside the project."""
    env = os.environ.get(HELDOUT_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "heldout"


def read_tasks(root: Path, folder: str, order: tuple[str, ...] = ()) -> dict[str, list[Labelled]]:
    """``root/folder/rows.jsonl`` grouped by ``task``, the tasks in ``order`` first and any
    other after them in file order; each row's question from ``meta.jsonl`` when present."""
    path = root / folder / "rows.jsonl"
    if not path.is_file():
        raise DatasetError(
            f"held-out data {path} is missing; point --heldout (or ${HELDOUT_ENV}) at the "
            "folder holding ragtruth/, lfqa_verification/ and attributionbench/."
        )
    questions = _questions(root / folder / "meta.jsonl")
    found: dict[str, list[Labelled]] = {task: [] for task in order}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                item = Labelled(
                    questions.get(row["id"]),
                    str(row["context"]),
                    str(row["answer"]),
                    _flag(row["faithful"]),
                )
                found.setdefault(str(row["task"]), []).append(item)
            except (ValueError, KeyError, TypeError) as exc:
                raise DatasetError(
                    f"{path} line {number} is not a held-out row "
                    f'{{"id", "context", "answer", "faithful", "task"}}: {exc}'
                ) from exc
    return {task: items for task, items in found.items() if items}


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"'faithful' must be true or false, not {value!r}")
    return value


def _questions(path: Path) -> dict[str, str]:
    """id -> question, for the rows that have one (RAGTruth's Summary and Data2txt rows
    have none)."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                if row.get("question"):
                    out[str(row["id"])] = str(row["question"])
    return out


def ragtruth(root: Path) -> dict[str, list[Labelled]]:
    """RAGTruth's test split (Niu et al., ACL 2024), response level, per task."""
    return read_tasks(root, "ragtruth", RAGTRUTH_TASKS)


def lfqa(root: Path) -> list[Labelled]:
    """LFQA-Verification (Chen et al. 2023): the 1,500 answer sentences, every generating
    setting together (as LLM-AggreFact's LFQA subset pools them)."""
    return [item for items in read_tasks(root, "lfqa_verification").values() for item in items]


def attributionbench(root: Path) -> dict[str, list[Labelled]]:
    """AttributionBench's test files (Li et al., Findings of ACL 2024), per subset."""
    return read_tasks(root, "attributionbench", ATTRIBUTIONBENCH_SUBSETS)


def faithbench(root: Path) -> list[Labelled]:
    """FaithBench (Bao et al. 2024): news summaries by ten LLMs, labelled span by span by
    people; a summary is faithful unless its worst label is ``FAITHBENCH_UNFAITHFUL``."""
    path = _held_file(root / "faithbench" / "FaithBench.csv")
    csv.field_size_limit(1 << 30)  # a news article is one field
    with path.open(encoding="utf-8", newline="") as handle:
        try:
            return [
                Labelled(
                    None, row["source"], row["summary"], row["worst-label"] != FAITHBENCH_UNFAITHFUL
                )
                for row in csv.DictReader(handle)
            ]
        except KeyError as exc:
            raise DatasetError(
                f"{path} is not FaithBench's CSV (columns source, summary, worst-label): {exc}"
            ) from exc


def summac(root: Path) -> dict[str, list[Labelled]]:
    """SummaC's benchmark (Laban et al. 2022), per subset: ``{id: {document, claim, label}}``
    with label 1 for a consistent summary."""
    found: dict[str, list[Labelled]] = {}
    for name in SUMMAC_SUBSETS:
        path = _held_file(root / "summac" / f"{name}.json")
        try:
            rows = json.loads(path.read_text(encoding="utf-8")).values()
            found[name] = [
                Labelled(None, str(r["document"]), str(r["claim"]), int(r["label"]) == 1)
                for r in rows
            ]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DatasetError(
                f"{path} is not a SummaC benchmark file ({{id: {{document, claim, label}}}}): {exc}"
            ) from exc
    return found


def _held_file(path: Path) -> Path:
    if not path.is_file():
        raise DatasetError(
            f"held-out data {path} is missing; point --heldout (or ${HELDOUT_ENV}) at the "
            "folder holding ragtruth/, lfqa_verification/, attributionbench/, faithbench/ "
            "and summac/."
        )
    return path


@dataclass(frozen=True, slots=True)
class Anchor:
    """A published figure of another checker on (nearly) the same data."""

    checker: str
    value: float
    note: str

    def __str__(self) -> str:
        return f"{self.checker} {self.value:.1f} ({self.note})"


_CARD = "HHEM card, response level"
_AGGREFACT = "LLM-AggreFact"
RAGTRUTH_MEAN = "mean of the 3 tasks"
LFQA_SPLIT = "answer sentences"

ANCHORS: dict[tuple[str, str], tuple[Anchor, ...]] = {
    ("RAGTruth", "QA"): (
        Anchor("HHEM-2.1-Open", 74.3, _CARD),
        Anchor("GPT-4 zero-shot", 74.1, _CARD),
    ),
    ("RAGTruth", "Summary"): (
        Anchor("HHEM-2.1-Open", 64.4, _CARD),
        Anchor("GPT-4 zero-shot", 62.6, _CARD),
    ),
    ("RAGTruth", RAGTRUTH_MEAN): (
        Anchor("MiniCheck-Flan-T5-L", 78.0, _AGGREFACT + " RAGTruth, claim level"),
        Anchor("Bespoke-MiniCheck-7B", 84.0, _AGGREFACT + " RAGTruth, claim level"),
        Anchor("AlignScore", 71.7, _AGGREFACT + " RAGTruth, claim level"),
    ),
    ("LFQA-Verification", LFQA_SPLIT): (
        Anchor("MiniCheck-Flan-T5-L", 85.2, _AGGREFACT + " LFQA"),
        Anchor("AlignScore", 84.5, _AGGREFACT + " LFQA"),
        Anchor("HHEM-2.1", 84.1, _AGGREFACT + " LFQA"),
    ),
    ("AttributionBench", "ExpertQA"): (
        Anchor("MiniCheck-Flan-T5-L", 59.0, _AGGREFACT + " ExpertQA; all checkers 55-61"),
        Anchor("Claude-3.5 Sonnet", 60.9, _AGGREFACT + " ExpertQA"),
    ),
    ("AttributionBench", "Stanford-GenSearch"): (
        Anchor("MiniCheck-Flan-T5-L", 74.6, _AGGREFACT + " ClaimVerify"),
        Anchor("AlignScore", 69.6, _AGGREFACT + " ClaimVerify"),
    ),
    ("AttributionBench", "LFQA"): (
        Anchor("MiniCheck-Flan-T5-L", 85.2, _AGGREFACT + " LFQA"),
        Anchor("AlignScore", 84.5, _AGGREFACT + " LFQA"),
    ),
}
"""Published figures in percent, from each folder's README (which names the sources and
commits they were read from). Response-level RAGTruth and claim-level LLM-AggreFact are
different units, and LLM-AggreFact's subsets are other splits of the same annotations:
indicative, not like for like."""


def anchors(benchmark: str, split: str) -> tuple[str, ...]:
    return tuple(str(a) for a in ANCHORS.get((benchmark, split), ()))


__all__ = [
    "ANCHORS",
    "ATTRIBUTIONBENCH_SUBSETS",
    "FAITHBENCH_SPLIT",
    "FAITHBENCH_UNFAITHFUL",
    "HELDOUT_ENV",
    "LFQA_SPLIT",
    "RAGTRUTH_MEAN",
    "RAGTRUTH_TASKS",
    "SUMMAC_MACRO",
    "SUMMAC_SUBSETS",
    "Anchor",
    "anchors",
    "attributionbench",
    "default_heldout_dir",
    "faithbench",
    "lfqa",
    "ragtruth",
    "read_tasks",
    "summac",
]
