"""Readers for the human-labelled sets of the meta-evaluation (``../shared/data/evals``, and
public sets a user points at).

Each set becomes a list of :class:`Labelled` items — a question (when the set has one), a
context, an answer and whether people judged the answer grounded — or, for WikiEval, of
``(better, worse)`` pairs over the same question and context.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._datasets import DatasetError

DATA_ENV = "KBGRAPH_EVAL_DATA"
BEGIN_DEV = ("cmu-dog_begin_dev_cmu.tsv", "topicalchat_begin_dev_tc.tsv", "wow_begin_dev_wow.tsv")
BEGIN_TEST = ("wow_begin_test_wow.tsv",)


@dataclass(frozen=True, slots=True)
class Labelled:
    question: str | None
    context: str
    answer: str
    grounded: bool


@dataclass(frozen=True, slots=True)
class Pair:
    """``better`` should score higher than ``worse`` (same question and context)."""

    question: str
    context: str
    better: str
    worse: str


def default_data_dir() -> Path:
    """``$KBGRAPH_EVAL_DATA``, else ``../shared/data/evals`` beside the project."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "evals"


def _require(path: Path) -> Path:
    if not path.is_file():
        raise DatasetError(
            f"meta-evaluation data {path} is missing; point --data (or ${DATA_ENV}) at the "
            "folder holding wikieval/, halueval/ and begin/."
        )
    return path


def wikieval_pairs(
    root: Path, kind: Literal["faithfulness", "answer_relevance"] = "faithfulness"
) -> list[Pair]:
    """WikiEval (Es et al. 2023): ``answer`` is more faithful than ``ungrounded_answer``
    and more relevant than ``poor_answer``."""
    pairs: list[Pair] = []
    with _require(root / "wikieval" / "wikieval.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            if kind == "faithfulness":
                pairs.append(
                    Pair(
                        row["question"], row["context_v1"], row["answer"], row["ungrounded_answer"]
                    )
                )
            else:
                pairs.append(Pair(row["question"], "", row["answer"], row["poor_answer"]))
    return pairs


def halueval(root: Path, split: str) -> list[Labelled]:
    """HaluEval QA (Li et al. 2023): each row gives a right and a hallucinated answer to a
    question over the same knowledge."""
    items: list[Labelled] = []
    with _require(root / "halueval" / f"{split}.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            for answer, grounded in (
                (row["right_answer"], True),
                (row["hallucinated_answer"], False),
            ):
                items.append(Labelled(row["question"], row["knowledge"], answer, grounded))
    return items


def begin(root: Path, files: Sequence[str]) -> list[Labelled]:
    """BEGIN (Dziri et al. 2022): dialogue responses labelled "Fully attributable" or "Not
    fully attributable" to the knowledge; "Generic" responses are skipped, as the task
    defines attribution only for responses that share information."""
    items: list[Labelled] = []
    for name in files:
        with _require(root / "begin" / name).open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                label = row["begin_label"].strip()
                if label == "Generic":
                    continue
                grounded = label == "Fully attributable"
                items.append(Labelled(None, row["knowledge"], row["response"], grounded))
    return items


SUMMEDITS_DOMAINS = (
    "news", "podcast", "billsum", "samsum", "sales_call", "sales_email", "shakespeare",
    "scitldr", "qmsumm", "ectsum",
)  # fmt: skip
SUMMEDITS_VERIFIER_TRAIN = ("news", "podcast", "qmsumm", "sales_call")
"""The SummEdits domains the trained verifier learns from (``training/_human.py``); its
SummEdits figures are measured on the other domains only, never on what it trained on."""


def summedits(folder: Path) -> dict[str, list[Labelled]]:
    """SummEdits (Laban et al. 2023; github.com/salesforce/factualNLG, Apache-2.0): LLM
    summaries, and edits of them that people labelled consistent (1) or inconsistent (0)
    with the document, in ten domains. ``folder`` holds the release's
    ``summedits_<domain>.json`` files (its ``data/summedits``); the domains found there are
    read, in the release's order."""
    found: dict[str, list[Labelled]] = {}
    for domain in SUMMEDITS_DOMAINS:
        path = folder / f"summedits_{domain}.json"
        if not path.is_file():
            continue
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
            found[domain] = [
                Labelled(None, row["doc"], row["summary"], int(row["label"]) == 1) for row in rows
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError(
                f"{path} is not a SummEdits file (a JSON list of {{doc, summary, label}}): {exc}"
            ) from exc
    if not found:
        raise DatasetError(
            f"no summedits_<domain>.json file in {folder}; point --summedits at the data/"
            "summedits folder of github.com/salesforce/factualNLG"
        )
    return found


def sample(items: list[Labelled], limit: int | None) -> list[Labelled]:
    """At most ``limit`` items, taken as every k-th item of each label separately, so that
    the label mix is kept (and both labels stay present) whatever the file order."""
    if limit is None or limit >= len(items):
        return items
    out: list[Labelled] = []
    for grounded in (True, False):
        group = [item for item in items if item.grounded is grounded]
        if not group:
            continue
        share = max(1, round(limit * len(group) / len(items)))
        step = max(1, len(group) // share)
        out.extend(group[::step][:share])
    return out


__all__ = [
    "BEGIN_DEV",
    "BEGIN_TEST",
    "DATA_ENV",
    "SUMMEDITS_DOMAINS",
    "SUMMEDITS_VERIFIER_TRAIN",
    "Labelled",
    "Pair",
    "begin",
    "default_data_dir",
    "halueval",
    "sample",
    "summedits",
    "wikieval_pairs",
]
