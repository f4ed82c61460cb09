"""Development sets for the offline judge, built from public data into a folder outside the
repository (nothing here is shipped or committed); prints what it wrote.

    python benchmarks/judge_dev_sets.py --frank FRANK_CLONE [--summedits DIR] [--out DIR] [--quick]

Each set is JSON lines ``{"context", "answer", "grounded", "kind"}``, the format
``benchmarks/tune_judge.py --extra`` and ``benchmarks/bench_judge.py`` read.

- ``frank_cnndm`` / ``frank_xsum`` — FRANK (Pagnoni et al. 2021; github.com/artidoro/frank,
  MIT): 2,246 summaries of CNN/DM and XSum articles by nine summarisers, labelled by people;
  grounded = no annotated error in any sentence (``Factuality == 1``). Read from a clone:
  ``data/human_annotations.json`` and the articles and summaries, from
  ``data/benchmark_data.json`` or, where that large file is missing, from the per-article
  files of ``data/articles-wbertscore-json/`` (in the repository's history).
- ``summedits_<domain>`` — SummEdits (github.com/salesforce/factualNLG, Apache-2.0), the
  domains other than news, as given.
- ``synthetic_claims`` — single-sentence claims about lower-cased, tokenised news articles
  (FRANK's CNN/DM articles), FactCC-style (Kryściński et al. 2020): each human-written
  reference highlight is a consistent claim, and so are two of them fused (", and") and one
  under meta-framing ("the article discusses how …"); corrupted copies (a negation inserted,
  a number or a name swapped for another of the article) are inconsistent. Labels by
  construction, so a little noisy: a highlight may say more than its article.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

from _quick import parse

Row = dict[str, Any]
ARTICLES_COMMIT = "5860706bda0641136d10d27ead52c5f6ae79630e"  # has articles-wbertscore-json/
SUMMEDITS_DOMAINS = (
    "podcast",
    "qmsumm",
    "samsum",
    "scitldr",
    "ectsum",
    "sales_call",
    "sales_email",
)
FRAMES = (
    "the article discusses how {}",
    "here is a summary of the passage : {}",
    "the text reports that {}",
    "according to the article , {}",
)
QUICK_ROWS = 6  # --quick: the first summaries of each source
AUXILIARIES = ("is", "was", "are", "were", "has", "have", "had", "will", "can", "could", "did")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frank", type=Path, required=True, help="a clone of artidoro/frank")
    parser.add_argument("--summedits", type=Path, help="factualNLG's data/summedits folder")
    parser.add_argument("--out", type=Path, default=Path("/tmp/kbgraph-judge-dev"))
    parser.add_argument("--seed", type=int, default=7)
    args = parse(parser)
    args.out.mkdir(parents=True, exist_ok=True)
    summaries = frank_summaries(args.frank)[: QUICK_ROWS if args.quick else None]
    for origin, name in (("cnndm", "frank_cnndm"), ("bbc", "frank_xsum")):
        write(args.out / f"{name}.jsonl", [r for r in summaries if r["origin"] == origin])
    if args.summedits:
        for domain in SUMMEDITS_DOMAINS:
            rows = json.loads((args.summedits / f"summedits_{domain}.json").read_text("utf-8"))
            rows = rows[: QUICK_ROWS if args.quick else None]
            write(
                args.out / f"summedits_{domain}.jsonl",
                [
                    {"context": r["doc"], "answer": r["summary"], "grounded": r["label"] == 1}
                    for r in rows
                ],
            )
    cnndm = [r for r in summaries if r["origin"] == "cnndm"]
    write(args.out / "synthetic_claims.jsonl", synthetic_claims(cnndm, random.Random(args.seed)))


def write(path: Path, rows: list[Row]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{path}: {len(rows)} rows, {sum(r['grounded'] for r in rows)} grounded")


def frank_summaries(clone: Path) -> list[Row]:
    labels = json.loads((clone / "data" / "human_annotations.json").read_text("utf-8"))
    texts = _frank_texts(clone)
    rows = []
    for label in labels:
        article, summary, reference = texts[label["hash"], label["model_name"]]
        rows.append(
            {
                "context": article,
                "answer": summary,
                "grounded": label["Factuality"] == 1.0,
                "kind": label["model_name"],
                "origin": label["dataset"],
                "reference": reference,
                "hash": label["hash"],
            }
        )
    return rows


def _frank_texts(clone: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(hash, model) → (article, summary, reference summary)."""
    bundled = clone / "data" / "benchmark_data.json"
    if bundled.is_file():
        return {
            (r["hash"], r["model_name"]): (r["article"], r["summary"], r.get("reference", ""))
            for r in json.loads(bundled.read_text("utf-8"))
        }
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    for line in _git(clone, "ls-tree", "-r", ARTICLES_COMMIT).decode().splitlines():
        meta, path = line.split("\t")
        if not path.startswith("data/articles-wbertscore-json/"):
            continue
        article = json.loads(_git(clone, "cat-file", "-p", meta.split()[2]))
        for model in article["model_names"]:
            name = model.removesuffix("_lines")
            if name in article:
                texts = (article["article"], article[name], article.get(f"{name}_reference", ""))
                out[article["hash"], name] = texts
    return out


def _git(clone: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, check=True).stdout


def synthetic_claims(summaries: list[Row], rng: random.Random) -> list[Row]:
    rows: list[Row] = []
    seen: set[str] = set()
    for summary in summaries:
        if summary["hash"] in seen or not summary["reference"]:
            continue
        seen.add(summary["hash"])
        article = tokenise(summary["context"])
        highlights = [h for h in summary["reference"].split(" . ") if len(h.split()) > 5]
        claims = [tokenise(h).rstrip(" .") + " ." for h in highlights]
        for claim in claims[:3]:
            rows.append(_row(article, claim, True, "reference"))
            corrupted = (
                ("negation", negate(claim)),
                ("number", swap_number(claim, article, rng)),
                ("entity", swap_name(claim, summary["context"], rng)),
            )
            for kind, bad in corrupted:
                if bad and bad != claim:
                    rows.append(_row(article, bad, False, kind))
        if len(claims) >= 2:
            first, second = claims[0].rstrip(" ."), claims[1].rstrip(" .")
            rows.append(_row(article, f"{first} , and {second} .", True, "fusion"))
            rows.append(_row(article, rng.choice(FRAMES).format(claims[0]), True, "meta"))
    return rows


def _row(context: str, answer: str, grounded: bool, kind: str) -> Row:
    return {"context": context, "answer": answer, "grounded": grounded, "kind": kind}


_PLAIN_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_NAME = re.compile(r"(?<![.!?]\s)\b[A-Z][a-z]{2,}\b")


def tokenise(text: str) -> str:
    """Lower-cased, PTB-style tokenised text, as CNN/DM summarisation data ships it."""
    text = text.translate(
        str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
    )
    text = re.sub(r"([.,!?;:()\"])", r" \1 ", text)
    text = re.sub(r"(\w)'s\b", r"\1 's", text)
    text = re.sub(r"n't\b", " n't", text)
    return " ".join(text.lower().split())


def negate(claim: str) -> str | None:
    tokens = claim.split()
    for i, token in enumerate(tokens[1:], start=1):
        if token in AUXILIARIES:
            return " ".join([*tokens[: i + 1], "not", *tokens[i + 1 :]])
    return None


def swap_number(claim: str, article: str, rng: random.Random) -> str | None:
    found = re.findall(r"\b\d+\b", claim)
    if not found:
        return None
    number = rng.choice(found)
    others = sorted(set(re.findall(r"\b\d+\b", article)) - {number})
    if others and rng.random() < 0.6:
        new = rng.choice(others)
    else:
        new = str(int(number) + rng.choice((1, 2, 3, 10)))
    return re.sub(rf"\b{number}\b", new, claim, count=1)


def swap_name(claim: str, cased_article: str, rng: random.Random) -> str | None:
    """A capitalised word of the article (not opening a sentence) in the claim, replaced by
    another one of the article."""
    names = sorted(
        {w.lower() for w in re.findall(r"(?<![.!?]\s)\b[A-Z][a-z]{2,}\b", cased_article)}
    )
    present = [w for w in names if re.search(rf"\b{w}\b", claim)]
    absent = [w for w in names if not re.search(rf"\b{w}\b", claim)]
    if not present or not absent:
        return None
    return re.sub(rf"\b{rng.choice(present)}\b", rng.choice(absent), claim, count=1)


if __name__ == "__main__":
    main()
