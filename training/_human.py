"""Human-labelled (claim, evidence) pairs for the verifier: SummEdits' training domains and
WiCE's train split. Both are real paraphrase, which the edits of ``_edits`` are not: the
first model learned from near-copies that only near-copies are supported
(``../shared/design/verifier_facts.md``).

Each claim is read against the evidence the judge gives the verifier at run time
(``ContextText.verifier_evidence``: the best aligned sentence and its neighbours), so the
model learns on the windows it will see, not on gold ones it never gets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from kbgraph.evals._benchmarks import SUMMEDITS_VERIFIER_TRAIN
from kbgraph.evals._claims import split_claims
from kbgraph.evals._judges._context import ContextText, context_text, quote_key

Pair = dict[str, object]


def pair(claim: str, evidence: str, label: int, kind: str) -> Pair:
    return {"claim": claim.strip(), "evidence": evidence.strip(), "label": label, "kind": kind}


def claims_of(summary: str) -> list[str]:
    """The claims the faithfulness metric would judge in ``summary``."""
    return [c.text for c in split_claims(summary)]


def edited_claims(summary: str, original: str) -> tuple[list[str], list[str]]:
    """``summary``'s claims split into those its edit changed and those it kept from
    ``original``: only a changed claim carries the row's label (an inconsistent summary's
    untouched sentences are still supported)."""
    kept = {quote_key(c) for c in claims_of(original)}
    claims = claims_of(summary)
    return [c for c in claims if quote_key(c) not in kept], [
        c for c in claims if quote_key(c) in kept
    ]


def best_window(claim: str, ctx: ContextText) -> str:
    """The first text the judge's verifier reads ``claim`` against."""
    return ctx.verifier_evidence(claim)[0]


def summedits_rows(folder: Path, domains: Iterable[str]) -> Iterator[dict]:
    for domain in domains:
        path = folder / f"summedits_{domain}.json"
        if path.is_file():
            yield from json.loads(path.read_text(encoding="utf-8"))


def summedits_pairs(
    folder: Path, domains: Iterable[str] = SUMMEDITS_VERIFIER_TRAIN
) -> Iterator[Pair]:
    """Per SummEdits row of ``domains``: each claim its edit changed, labelled as people
    labelled the summary (``summedits``); each claim kept from the seed summary once per
    document, supported (``summedits-kept``: the seed summaries were checked consistent)."""
    contexts: dict[str, ContextText] = {}
    seen: set[tuple[str, str]] = set()
    for row in summedits_rows(folder, domains):
        ctx = contexts.setdefault(row["doc"], context_text(row["doc"]))
        changed, kept = edited_claims(row["summary"], row.get("original_summary") or "")
        label = int(int(row["label"]) == 1)
        for claim in changed:
            yield pair(claim, best_window(claim, ctx), label, "summedits")
        for claim in kept:
            if (row["doc"], claim) not in seen:
                seen.add((row["doc"], claim))
                yield pair(claim, best_window(claim, ctx), 1, "summedits-kept")


def supported_part(tokens: list[str], unsupported: list[bool], min_tokens: int = 5) -> str | None:
    """The claim without its unsupported tokens, when they form one span at its end (a
    trailing date, place or clause: "… against Zimbabwe on 24 October 1996."), so that what
    is left is still a sentence a person wrote; ``None`` otherwise."""
    marked = [i for i, flag in enumerate(unsupported) if flag]
    if not marked:
        return None
    end = len(tokens) - (1 if tokens and tokens[-1] in {".", "!", "?"} else 0)
    first = marked[0]
    if marked != list(range(first, end)) or first < min_tokens:
        return None
    head = tokens[:first]
    while head and head[-1] in {",", ";", ":", "-", "and", "or", "but", "which", "who"}:
        head = head[:-1]
    if len(head) < min_tokens:
        return None
    text = " ".join(head)
    for mark in (" ,", " .", " '", " )", " %", " ;", " :"):
        text = text.replace(mark, mark.strip())
    return text.replace("( ", "(").replace(" - ", "-") + "."


def wice_evidence(row: dict) -> str:
    """The sentences people marked as supporting the claim (the first set), with the
    page's order kept."""
    sentences = row["evidence"]
    chosen = sorted({i for i in row["supporting_sentences"][0] if i < len(sentences)})
    return " ".join(sentences[i] for i in chosen)


def wice_pairs(path: Path) -> Iterator[Pair]:
    """WiCE's train claims (all *partially* supported, with the unsupported tokens marked)
    against their supporting sentences: the claim as written -> 0 (``wice``); the claim cut
    before a trailing unsupported span -> 1 (``wice-cut``)."""
    for line in path.open(encoding="utf-8"):
        row = json.loads(line)
        if not row.get("supporting_sentences"):
            continue
        evidence = wice_evidence(row)
        if not evidence:
            continue
        yield pair(row["claim"], evidence, 0, "wice")
        cut = supported_part(row["claim_tokens"], row["non_supported_spans"])
        if cut:
            yield pair(cut, evidence, 1, "wice-cut")
