"""Choose ``VERIFIER_WEIGHT``, the verifier's share of the offline judge's graded support
score, on development data the verifier never trained on — never on a held-out set::

    python training/tune_verifier_weight.py [--dev DIR] [--limit 400]

- SciFact *test* claims (``queries_all.jsonl`` rows of the test split, whose rationales the
  training script leaves out): AUROC of SUPPORT against CONTRADICT, each claim against its
  rationale sentences with one neighbour each side;
- ``evals/data/judge_contrast.jsonl``: pairwise accuracy, consistent above inconsistent;
- with ``--dev DIR`` (what ``benchmarks/judge_dev_sets.py`` writes: FRANK CNN/DM and XSum,
  synthetic claims): AUROC of grounded against not, per set, each answer scored as the
  faithfulness metric scores it (the mean support of its claims).

Prints one row per weight; the evidence is computed once and the weight varied after.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbgraph.evals._claims import split_claims  # noqa: E402
from kbgraph.evals._judges import OfflineJudge  # noqa: E402
from kbgraph.evals._judges._evidence import Evidence, support_score  # noqa: E402
from kbgraph.evals._judges._verifier import Verifier  # noqa: E402
from kbgraph.evals._stats import auroc, pairwise_accuracy  # noqa: E402
from kbgraph.evals._text import split_sentences  # noqa: E402

SCIFACT = ROOT.parent / "shared/data/beir/scifact"
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
Row = tuple[list[Evidence], bool]


def scifact_test(limit: int) -> list[tuple[str, str, bool]]:
    test = {json.loads(line)["_id"] for line in (SCIFACT / "queries.jsonl").open()}
    corpus = {}
    for line in (SCIFACT / "corpus.jsonl").open():
        row = json.loads(line)
        corpus[row["_id"]] = split_sentences(row["text"])
    out = []
    for line in (SCIFACT / "queries_all.jsonl").open():
        row = json.loads(line)
        if row["_id"] not in test:
            continue
        for doc_id, sets in row["metadata"].items():
            sentences = corpus.get(doc_id, [])
            for ev in sets:
                idx = [i for i in ev["sentences"] if i < len(sentences)]
                if idx:
                    lo, hi = max(0, min(idx) - 1), min(len(sentences), max(idx) + 2)
                    context = " ".join(sentences[lo:hi])
                    out.append((row["text"], context, ev["label"] == "SUPPORT"))
    return out[:limit]


def answer_rows(judge: OfflineJudge, items: list[tuple[str, str, bool]]) -> list[Row]:
    rows = []
    for answer, context, grounded in items:
        claims = [c.text for c in split_claims(answer)] or [answer]
        rows.append((judge.evidence(claims, context), grounded))
    return rows


def row_score(evidence: list[Evidence], weight: float, blend: float = 0.0) -> float:
    """The mean claim support, or with ``blend`` > 0 that share of the weakest claim's."""
    scores = [support_score(e, verifier_weight=weight) for e in evidence]
    return (1 - blend) * sum(scores) / len(scores) + blend * min(scores)


def row_auroc(rows: list[Row], weight: float, blend: float = 0.0) -> float:
    pos = [row_score(e, weight, blend) for e, g in rows if g]
    neg = [row_score(e, weight, blend) for e, g in rows if not g]
    return auroc(pos, neg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", type=Path, help="benchmarks/judge_dev_sets.py's folder")
    parser.add_argument("--limit", type=int, default=400, help="rows per set")
    args = parser.parse_args()
    rng = random.Random(7)
    judge = OfflineJudge("local", verifier=Verifier())
    sets: dict[str, list[Row]] = {"scifact test claims": answer_rows(judge, scifact_test(400))}
    print(f"scifact test claims: {len(sets['scifact test claims'])} judged", file=sys.stderr)
    for name in ("frank_cnndm", "frank_xsum", "synthetic_claims"):
        path = args.dev / f"{name}.jsonl" if args.dev else None
        if path is None or not path.is_file():
            continue
        items = [json.loads(line) for line in path.open(encoding="utf-8")]
        items = rng.sample(items, min(args.limit, len(items)))
        sets[name] = answer_rows(judge, [(r["answer"], r["context"], r["grounded"]) for r in items])
        print(f"{name}: {len(items)} rows judged", file=sys.stderr, flush=True)
    contrast = [
        json.loads(line)
        for line in (ROOT / "evals/data/judge_contrast.jsonl").open(encoding="utf-8")
    ]
    pairs = [
        (answer_rows(judge, [(r["consistent"], r["context"], True)])[0][0],
         answer_rows(judge, [(r["inconsistent"], r["context"], False)])[0][0])
        for r in contrast
    ]  # fmt: skip
    print("| weight | " + " | ".join(sets) + " | contrast pairwise |")
    print("|---" * (len(sets) + 2) + "|")
    for weight in GRID:
        cells = [f"{row_auroc(rows, weight):.3f}" for rows in sets.values()]
        acc = pairwise_accuracy([(row_score(a, weight), row_score(b, weight)) for a, b in pairs])
        print(f"| {weight} | " + " | ".join(cells) + f" | {acc:.3f} |", flush=True)
    print("\nRow score = (1 - b) * mean + b * min of the claims' support, at each weight:")
    for weight in GRID:
        for blend in (0.25, 0.5):
            cells = [f"{row_auroc(rows, weight, blend):.3f}" for rows in sets.values()]
            print(f"| {weight} b={blend} | " + " | ".join(cells) + " | |", flush=True)


if __name__ == "__main__":
    main()
