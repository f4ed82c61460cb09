"""What part of an option's entry answers a question: the entry is larger than the sentence
that shares the question's words (reference docs put the value in a short sentence after the
words that match, a table's rows under its header, a definition under its ``def`` line), and
the question's form says which part to quote.

Small pure predicates; :mod:`._extractive` applies them to the units of :mod:`._passages`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._passages import Unit

_POINTER = re.compile(
    r"\b(see|refer to|described in|documented in|defaults? match|listed in|(is|are) in"
    r"|for more (information|details)|more on this"
    # "src/harbor/webhooks.py contains a reference implementation (verify_signature)": a
    # file named as the place to look, which repeats the question's words (the function's
    # name) without the steps the same page states.
    r"|(contains?|has|holds?|provides?|includes?|ships?|gives?) (a|an|the) "
    r"(\w+ )?(implementation|example|sample)s?)\b",
    re.IGNORECASE,
)
# A value a reader asks for: a number, a name in code (dotted, snake_case, a call, an
# assignment, an upper-case constant, a header name such as Retry-After).
_VALUE = re.compile(
    r"\d|\w[.=(]\w|\w_\w|\w\(|\b[A-Z][A-Z0-9]+_[A-Z0-9_]+\b|=\s*\S|\b[A-Z]\w*-[A-Z]\w*\b"
    r"|(?<![\w-])--\w"  # a command-line option: --debug
    r"|\b[A-Z][a-z]+[A-Z]\w*"  # a class or exception: UndefinedError
)
# A sentence that states a default holds a value even when it is a plain word once the
# markup is off ("The default is `noopener`." reads "The default is noopener.").
_STATES_DEFAULT = re.compile(
    r"\b(the default( \w+)? (is|of)|defaults? to|per default|by default)\b", re.IGNORECASE
)
# A reference entry's field line ("Default: ``'session'``"): whatever follows is the value.
_DEFAULT_FIELD = re.compile(r"^\s*default:\s*\S", re.IGNORECASE)
_DEF = re.compile(r"\s*(async\s+def|def|class)\s+\w")
_LISTS = re.compile(r"(:|\.\.\.|…)$")
_EXAMPLE = re.compile(r"\b(this|the following|for) example\b|\bas follows\b", re.IGNORECASE)
_HOW_TO = re.compile(r"^\s*how (do|can|should|would) (i|we|you)\b|^\s*how to\b", re.IGNORECASE)
HOW_TO_WEIGHT = 1.5
"""A "how do I" question is answered by what a sentence that introduces a block shows
("…instantiating a client with HTTP/2 support enabled:"): such a sentence's score is
multiplied by this."""
_SETTING_QUESTION = re.compile(
    r"\b(configur\w*|defaults?|settings?|options?|set|change|environment variables?)\b",
    re.IGNORECASE,
)
_SETTING_HEADER = re.compile(
    r"\b(default|setting|option|parameter|value|variable|key)s?\b", re.IGNORECASE
)
SETTINGS_WEIGHT = 2.0
"""A settings table (its header names a setting, a default, a variable) answers a
"configure"/"default" question with its rows: its score is multiplied by this."""
POINTER_WEIGHT = 0.1
TITLE_WEIGHT = 0.5
"""A module docstring's summary line ("Signing and verifying Harbor webhook deliveries.")
keeps this share: it names the file's topic, so it matches a question about the topic,
but states no step or value; a sentence of the same sources that does comes first."""
POINTER_LEAD = 5
"""A sentence that only refers elsewhere ("The defaults match docs/configuration.md") keeps
this share of its score: it repeats the question's words without stating anything."""
MAX_FOLLOW_UPS = 3
"""How many sentences after a quoted one may join it (the last holding a value)."""
MAX_LEAD = 1
"""How many sentences before a quoted one may join it: the first of its paragraph."""
MAX_TABLE_ROWS = 8
MAX_LIST_ITEMS = 4


def is_pointer(text: str) -> bool:
    """A sentence that sends the reader elsewhere (it opens with the pointer: at most
    :data:`POINTER_LEAD` words come before it) and holds no value of its own beyond a path
    or a section name. "X signs the cookie, see Y" states a fact first and is no pointer."""
    found = _POINTER.search(text)
    if found is None or len(text[: found.start()].split()) > POINTER_LEAD:
        return False
    rest = re.sub(r"\S*[/\\]\S*|\S+\.(md|rst|txt|html|py)\b|\"[^\"]*\"|\([^)]*\)", "", text)
    return not re.search(r"\d", rest)


_PATH_CELL = re.compile(r"\S*/\S*|\S+\.(md|rst|txt|html?|adoc)(#\S*)?")


def is_index_table(rows: Sequence[str]) -> bool:
    """A table of contents: every row but the header ends in a path or a link ("Orders
    endpoints | docs/api/orders.md"). It repeats a topic's words and sends the reader
    elsewhere, as a pointer sentence does; ``rows`` are the cells joined by " | "."""
    body = rows[1:] if len(rows) > 1 else rows
    return bool(body) and all(_PATH_CELL.fullmatch(row.split(" | ")[-1]) for row in body)


FORM_WEIGHT = 1.5
"""A unit in the form the question asks for (a FAQ entry asking the reader's question, the
definition of the term a "What is X?" question names, a default and its value, a formula)
counts this much more: its form says it answers, where shared words only say it is about
the same thing."""
# The question as asked comes first; the search queries made from it may follow it.
_WHAT_IS = re.compile(r"^\s*what (is|are) (an? |the )?(?P<subject>[^?]+?)\s*(\?|$)", re.I)
MAX_SUBJECT_WORDS = 4


def faq_question(text: str) -> str | None:
    """The question of a unit that is a question kept with its answer (a FAQ's "Q: …? A:
    …"), ``None`` for any other unit."""
    head, mark, rest = text.partition("?")
    return head if mark and any(ch.isalnum() for ch in rest) else None


def defined_subject(question: str) -> str | None:
    """What a "What is X?" question asks to define, when it is a short term."""
    found = _WHAT_IS.match(question)
    subject = found.group("subject") if found else ""
    return subject if 0 < len(subject.split()) <= MAX_SUBJECT_WORDS else None


def defines(subject: str, text: str) -> bool:
    """A unit that opens with the term it is about: a glossary entry ("Full jitter A
    backoff strategy …"), "X is …", "X: …"."""
    opening = re.sub(r"^(an?|the)\s+", "", text.strip(), flags=re.I)
    return opening.casefold().startswith(subject.casefold())


_ASKS_DEFAULT = re.compile(r"\bdefaults?\b", re.IGNORECASE)


def asks_default(question: str) -> bool:
    return bool(_ASKS_DEFAULT.search(question))


def states_default(text: str) -> bool:
    """A sentence that states a default and then its value ("… so the default of 5 means
    …"); "which defaults to no extra schemes" names no value."""
    if _DEFAULT_FIELD.match(text):
        return True
    found = _STATES_DEFAULT.search(text)
    return found is not None and bool(_VALUE.search(text, found.end()))


_ASKS_FORMULA = re.compile(
    r"\bhow (is|are|do|does)\b.*\b(comput|calculat|determin|deriv)\w*|\bformula\b", re.I
)
# An expression: a call whose arguments hold an operator, or a power.
_FORMULA = re.compile(r"\w\([^()]*\w\s*[*+/]\s*\w[^()]*\)|\w\s*\*\*\s*\w")


def gives_formula(question: str, text: str) -> bool:
    """A sentence holding the expression a "How is X computed?" question asks for
    ("… between 0 and min(cap, base * 2 ** n)")."""
    return bool(_ASKS_FORMULA.search(question) and _FORMULA.search(text))


def holds_value(text: str) -> bool:
    return bool(_VALUE.search(text) or _STATES_DEFAULT.search(text))


def settings_table(question: str, header: str) -> bool:
    """A table whose header row names settings or defaults, asked about configuring."""
    return bool(_SETTING_QUESTION.search(question) and _SETTING_HEADER.search(header))


def asks_how(question: str) -> bool:
    return bool(_HOW_TO.search(question))


def introduces(text: str) -> bool:
    """A sentence that introduces what follows it: a block, a list ("…two ways:", "…
    such as this example, which …")."""
    return bool(_LISTS.search(text.rstrip()) or _EXAMPLE.search(text))


def enclosing_definition(lines: Sequence[str], index: int) -> int | None:
    """The ``def``/``class`` line a code line belongs to (the nearest one above it that is
    indented less), ``None`` when the chunk holds none: a code answer names its definition."""
    line = lines[index]
    if _DEF.match(line):
        return None
    indent = len(line) - len(line.lstrip()) if line.strip() else 1 << 30
    for j in range(index - 1, -1, -1):
        candidate = lines[j]
        if _DEF.match(candidate):
            margin = len(candidate) - len(candidate.lstrip())
            if margin < indent or not line.strip():
                return j
        elif _top_level_statement(candidate) and indent > 0:
            return None
    return None


def definition_term(lines: Sequence[str], index: int) -> int | None:
    """The term line of the definition-list item a line opens (a docstring's
    ```lstrip_blocks``` above its indented description): the name the answer is about."""
    if index == 0 or not lines[index].strip():
        return None
    above = lines[index - 1]
    indent = len(lines[index]) - len(lines[index].lstrip())
    margin = len(above) - len(above.lstrip())
    words = above.split()
    if not words or margin >= indent or len(words) > 3 or above.rstrip().endswith((".", ":")):
        return None
    return index - 1


def _top_level_statement(line: str) -> bool:
    """A line at the margin that ends the definition above it (not a decorator, comment,
    closing bracket or string)."""
    return bool(line.strip()) and not line[0].isspace() and line[0] not in "@#)\"'"


def best_rows(scores: Sequence[float]) -> list[int]:
    """The rows of a table to quote: those that match the question best (at least 0.6 of
    the best row), or every row when no row stands out (none matches, or half the rows
    match as well as the best: the question is about the table, as "How do I configure
    the retry policy?" is), at most :data:`MAX_TABLE_ROWS`."""
    best = max(scores, default=0.0)
    if best <= 0 or 2 * sum(1 for s in scores if s == best) >= len(scores):
        return list(range(len(scores)))[:MAX_TABLE_ROWS]
    return [k for k, s in enumerate(scores) if s >= 0.6 * best][:MAX_TABLE_ROWS]


def intro_of(every: list[Unit], unit: Unit) -> Unit | None:
    """The sentence that introduces the code block of ``unit`` ("Run the migrations once
    per release, before the new version takes traffic:"): a quoted command comes with it,
    since the sentence says when and why to run it."""
    if not unit.code or unit.block is None:
        return None
    start = next(k for k, u in enumerate(every) if u.code and u.block == unit.block)
    before = every[start - 1] if start > 0 else None
    if before is None or before.code or before.table is not None:
        return None
    return before if introduces(before.text) else None


def with_follow_ups(every: list[Unit], picked: list[Unit]) -> list[Unit]:
    """The picked units and, after a picked sentence, the rest of its paragraph up to the
    last of the next :data:`MAX_FOLLOW_UPS` sentences that holds a value or introduces a
    block or list: an option's entry often states its value ("The default is 5.") or
    shows it ("… as above:") a sentence or two after the words that match the question."""
    picked = [intro_of(every, unit) or unit if unit.code else unit for unit in picked]
    out: list[Unit] = []
    for unit in picked:
        out.append(unit)
        if unit.code or unit.table is not None:
            continue
        index = every.index(unit)
        out.extend(_lead(every, index))
        ahead = every[index + 1 : index + 1 + MAX_FOLLOW_UPS]
        same = [u for u in _while_same_paragraph(ahead, unit.paragraph)]
        telling = [k for k, u in enumerate(same) if holds_value(u.text) or introduces(u.text)]
        if telling:
            out.extend(same[: telling[-1] + 1])
        elif (value := _next_paragraph_value(unit, ahead)) is not None:
            out.append(value)
    return sorted(set(out), key=every.index)


def _next_paragraph_value(unit: Unit, ahead: list[Unit]) -> Unit | None:
    """The first sentence of the next paragraph when it names the value that ``unit`` and
    the rest of its paragraph do not ("They can be used to configure HTTP proxying." then
    "See HTTP_PROXY, HTTPS_PROXY …"): the names a "which" question asks for."""
    if holds_value(unit.text) or not ahead or ahead[0].paragraph == unit.paragraph:
        return None
    after = ahead[0]
    # A sentence that introduces a block or list opens an entry of its own.
    plain_prose = not after.code and after.table is None and not introduces(after.text)
    return after if plain_prose and not after.item and holds_value(after.text) else None


def _lead(every: list[Unit], index: int) -> list[Unit]:
    """The sentences before ``every[index]`` from the first of its paragraph, when that
    one is at most :data:`MAX_LEAD` before it and names a value: an entry opens with what
    it is about ("Send an Idempotency-Key header with every write. If Harbor has seen the
    key …")."""
    unit = every[index]
    start = index
    while start > 0 and every[start - 1].paragraph == unit.paragraph and not unit.code:
        start -= 1
    if start == index or index - start > MAX_LEAD or not holds_value(every[start].text):
        return []
    return every[start:index]


def _while_same_paragraph(units_: list[Unit], paragraph: int) -> list[Unit]:
    out: list[Unit] = []
    for unit in units_:
        if unit.code or unit.paragraph != paragraph:
            break
        out.append(unit)
    return out


def introduced_list(every: list[Unit], unit: Unit) -> list[Unit]:
    """The sentences of the list items a sentence ending in ``:`` introduces ("There are
    two ways …:"), at most :data:`MAX_LIST_ITEMS` items, each whole (a step of two
    sentences counts once): the items are the answer the sentence announces."""
    if unit.code or not introduces(unit.text):
        return []
    index = every.index(unit)
    items: list[Unit] = []
    count = 0
    for after in every[index + 1 :]:
        if after.code or after.table is not None:
            break
        if after.item:
            if count == MAX_LIST_ITEMS:
                break
            count += 1
            items.append(after)
        elif not items or after.paragraph != items[-1].paragraph:
            break
        else:
            items.append(after)
    return items


def is_header(lines: list[str], index: int) -> bool:
    below = lines[index + 1] if index + 1 < len(lines) else ""
    return bool(below.strip()) and set(below.strip()) <= set("|-: ")


__all__ = [
    "FORM_WEIGHT",
    "HOW_TO_WEIGHT",
    "MAX_FOLLOW_UPS",
    "MAX_LIST_ITEMS",
    "MAX_TABLE_ROWS",
    "POINTER_WEIGHT",
    "SETTINGS_WEIGHT",
    "TITLE_WEIGHT",
    "asks_default",
    "asks_how",
    "best_rows",
    "defined_subject",
    "defines",
    "definition_term",
    "enclosing_definition",
    "faq_question",
    "gives_formula",
    "holds_value",
    "intro_of",
    "introduced_list",
    "introduces",
    "is_header",
    "is_index_table",
    "is_pointer",
    "settings_table",
    "states_default",
    "with_follow_ups",
]
