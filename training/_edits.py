"""Edits of a source sentence for the verifier's training pairs: ``POSITIVE`` ones keep its
meaning, ``NEGATIVE`` ones mimic what a model invents (the hallucination kinds of RAGTruth
and FRANK: a changed number or entity, a reversed relation, added unsupported content,
spliced spans, a flipped polarity). Each edit is ``(doc, i, docs, rng) -> claim | None``:
``None`` when the sentence gives it nothing to work on."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Doc:
    name: str
    sentences: list[str]
    _names: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        if not self._names:
            found = {m for s in self.sentences for m in _names_in(s)}
            self._names = sorted(found)
        return self._names


Edit = Callable[[Doc, int, list[Doc], random.Random], "str | None"]

_NAME = re.compile(r"(?<=[a-z,;:] )(?:[A-Z][\w\-]+(?: [A-Z][\w\-]+)*)")
_NUM = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)?)(?![\w.]\d)")
_UNITS = [("ms", "s"), ("seconds", "minutes"), ("MB", "GB"), ("KB", "MB"), ("%", " times"),
          ("days", "weeks"), ("hours", "minutes"), ("mg", "g"), ("years", "months")]  # fmt: skip
_ANTONYMS = [
    ("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"),
    ("higher", "lower"), ("more", "less"), ("enabled", "disabled"), ("enable", "disable"),
    ("allow", "forbid"), ("allows", "prevents"), ("before", "after"), ("always", "never"),
    ("positive", "negative"), ("larger", "smaller"), ("maximum", "minimum"),
    ("required", "optional"), ("synchronous", "asynchronous"), ("first", "last"),
    ("improved", "worsened"), ("reduced", "raised"), ("inhibits", "activates"),
    ("promotes", "suppresses"), ("associated", "unassociated"), ("default", "non-default"),
    ("true", "false"), ("success", "failure"), ("accept", "reject"), ("include", "exclude"),
]  # fmt: skip
_AUX = re.compile(r"\b(is|are|was|were|can|will|should|does|do|did|has|have|may|must)\b")
_NEG = re.compile(r"\b(is|are|was|were|can|will|should|does|do|did|has|have|may|must) not\b")
_RELATION = re.compile(
    r"^(.*?\b)([A-Za-z][\w\-]*(?: [\w\-]+)?) (causes|increases|reduces|inhibits|activates|"
    r"requires|calls|returns|contains|precedes|follows|replaces|wraps|uses|regulates|"
    r"binds|raises|lowers|sends|receives) (?:the )?([A-Za-z][\w\-]*(?: [\w\-]+)?)(\b.*)$"
)
_FRAMES = ("According to the source, ", "The documentation says that ", "It is stated that ",
           "The text notes that ", "As described, ")  # fmt: skip
_SMALL = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def _names_in(sentence: str) -> list[str]:
    return [m for m in _NAME.findall(sentence) if len(m) > 2]


def window_around(doc: Doc, i: int, rng: random.Random) -> str:
    """1-4 sentences holding sentence ``i``, as the judge compares a claim with windows."""
    before, after = rng.randint(0, 2), rng.randint(1, 2)
    lo, hi = max(0, i - before), min(len(doc.sentences), i + after + 1)
    return " ".join(doc.sentences[lo:hi])


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


# -- positives ---------------------------------------------------------------------------


def same(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    return doc.sentences[i]


def drop_clause(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    cut = re.sub(r"\s*\([^)]*\)", "", s)
    if cut != s:
        return cut
    parts = re.split(r",\s+(?:which|who|where|while|and|but|although|as|with)\b", s, maxsplit=1)
    if len(parts) == 2 and len(parts[0].split()) >= 5:
        return parts[0].rstrip(",;:") + "."
    parts = s.split(", ")
    if len(parts) >= 3:
        drop = rng.randrange(1, len(parts))
        return ", ".join(p for k, p in enumerate(parts) if k != drop)
    return None


def merge_next(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    if i + 1 >= len(doc.sentences):
        return None
    first = doc.sentences[i].rstrip(". ")
    return f"{first}, and {_lower_first(doc.sentences[i + 1])}"


def reorder_list(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    m = re.search(r"(\w[\w\- ]*), (\w[\w\- ]*),? and (\w[\w\- ]*)", doc.sentences[i])
    if not m:
        return None
    a, b, c = m.group(1).split()[-1], m.group(2), m.group(3).split()[0]
    head = m.group(1)[: len(m.group(1)) - len(a)]
    tail = m.group(3)[len(c) :]
    new = f"{head}{c}, {a} and {b}{tail}"
    return doc.sentences[i][: m.start()] + new + doc.sentences[i][m.end() :]


def number_rewrite(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    m = _NUM.search(s)
    if not m:
        return None
    raw = m.group(1)
    value = raw.replace(",", "")
    if value.isdigit() and int(value) <= 10 and rng.random() < 0.6:
        new = _SMALL[int(value)]
    elif value.isdigit() and int(value) >= 1000:
        new = f"{int(value):,}" if "," not in raw else value
    elif "." in value:
        new = value.rstrip("0").rstrip(".") if value.endswith("0") else f"{float(value):.1f}"
        if float(new) != float(value):
            return None
    else:
        return None
    return s[: m.start(1)] + new + s[m.end(1) :]


def framed(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    return rng.choice(_FRAMES) + _lower_first(doc.sentences[i])


def summarise_two(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    """The first clause of this sentence with the first clause of the next: a shorter
    statement drawn from two sentences, as a summary writes."""
    if i + 1 >= len(doc.sentences):
        return None
    a = re.split(r"[,;:]", doc.sentences[i])[0].rstrip(". ")
    b = re.split(r"[,;:]", doc.sentences[i + 1])[0].rstrip(". ")
    if len(a.split()) < 4 or len(b.split()) < 4:
        return None
    return f"{a}; {_lower_first(b)}."


# -- negatives ---------------------------------------------------------------------------


def change_number(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    found = list(_NUM.finditer(s))
    if not found:
        return None
    m = rng.choice(found)
    raw = m.group(1).replace(",", "")
    try:
        value = float(raw)
    except ValueError:
        return None
    choice = rng.random()
    if choice < 0.4:
        new = value + rng.choice([1, 2, 5, 10, -1, -2])
    elif choice < 0.7:
        new = value * rng.choice([2, 3, 10, 0.5])
    else:
        digits = list(str(int(value)))
        k = rng.randrange(len(digits))
        digits[k] = str((int(digits[k]) + rng.randint(1, 8)) % 10)
        new = float("".join(digits))
    text = f"{new:g}" if "." in raw else str(int(new))
    if text == raw or new < 0:
        return None
    return s[: m.start(1)] + text + s[m.end(1) :]


def change_unit(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    for a, b in rng.sample(_UNITS, len(_UNITS)):
        for x, y in ((a, b), (b, a)):
            pattern = rf"(?<=\d)\s?{re.escape(x)}\b" if x.isalpha() else rf"(?<=\d){re.escape(x)}"
            if re.search(pattern, s):
                return re.sub(pattern, f" {y.strip()}", s, count=1)
    return None


def swap_name(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    mine = _names_in(s)
    if not mine:
        return None
    name = rng.choice(mine)
    pool = [n for n in doc.names if n != name and n not in s] or [
        n for d in rng.sample(docs, 5) for n in d.names if n not in s
    ]
    if not pool:
        return None
    return s.replace(name, rng.choice(pool), 1)


def negate(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    s = doc.sentences[i]
    if _NEG.search(s):
        return _NEG.sub(lambda m: m.group(1), s, count=1)
    for a, b in rng.sample(_ANTONYMS, len(_ANTONYMS)):
        for x, y in ((a, b), (b, a)):
            if re.search(rf"\b{x}\b", s):
                return re.sub(rf"\b{x}\b", y, s, count=1)
    if _AUX.search(s):
        return _AUX.sub(lambda m: f"{m.group(1)} not", s, count=1)
    if " no " in s:
        return s.replace(" no ", " some ", 1)
    return None


def swap_entities(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    """Two names, or two numbers, of one sentence trade places: the attribute moves to the
    other entity."""
    s = doc.sentences[i]
    for found in (_names_in(s), [m.group(1) for m in _NUM.finditer(s)]):
        distinct = list(dict.fromkeys(found))
        if len(distinct) >= 2:
            a, b = rng.sample(distinct, 2)
            return s.replace(a, "\0").replace(b, a).replace("\0", b)
    return None


def reverse_relation(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    m = _RELATION.match(doc.sentences[i])
    if not m or m.group(2).lower() == m.group(4).lower():
        return None
    return f"{m.group(1)}{m.group(4)} {m.group(3)} {m.group(2)}{m.group(5)}"


def foreign(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    other = rng.choice(docs)
    if other is doc:
        return None
    return rng.choice(other.sentences)


def add_clause(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    other = rng.choice(docs)
    if other is doc:
        return None
    extra = re.split(r"[,;]", rng.choice(other.sentences))[0].rstrip(". ")
    return f"{doc.sentences[i].rstrip('. ')}, and {_lower_first(extra)}."


def splice(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    """The start of this sentence with the end of another one of the same document."""
    others = [k for k in range(len(doc.sentences)) if k != i]
    if not others:
        return None
    a, b = doc.sentences[i].split(), doc.sentences[rng.choice(others)].split()
    if len(a) < 6 or len(b) < 6:
        return None
    return " ".join(a[: len(a) // 2] + b[len(b) // 2 :])


def added_sentence(doc: Doc, i: int, docs: list[Doc], rng: random.Random) -> str | None:
    """A true sentence followed by a plausible one the evidence does not hold."""
    other = rng.choice(docs)
    if other is doc:
        return None
    return f"{doc.sentences[i]} {rng.choice(other.sentences)}"


POSITIVE: list[tuple[str, Edit]] = [
    ("same", same), ("drop_clause", drop_clause), ("drop_clause", drop_clause),
    ("merge_next", merge_next), ("reorder_list", reorder_list),
    ("number_rewrite", number_rewrite), ("framed", framed), ("summarise_two", summarise_two),
    ("summarise_two", summarise_two),
]  # fmt: skip
NEGATIVE: list[tuple[str, Edit]] = [
    ("change_number", change_number), ("change_number", change_number),
    ("change_unit", change_unit), ("swap_name", swap_name), ("swap_name", swap_name),
    ("negate", negate), ("negate", negate), ("swap_entities", swap_entities),
    ("reverse_relation", reverse_relation), ("foreign", foreign), ("add_clause", add_clause),
    ("splice", splice), ("added_sentence", added_sentence),
]  # fmt: skip
