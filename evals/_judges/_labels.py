"""Words that name the number after them: "port 8080", "error 500", "step 3" (issue 41,
fifth round). That word is the number's unit (``_numbers.number_slots``), so that "port
8443" clashes with "port 8080": two bare numbers clash only beside two words in common,
and a sentence that writes two ports gave each only "port" ("The API listens on port
8443." was supported at 0.91 against "port 8080 and … port 9102"). A list or range after
the word shares it ("ports 80 and 443", "phase 2 to 3"); a unit after the number is its
own ("page 40% faster", "battery level 20%": ``_numbers``).

Configuration writes the label in its own ways, and they label the number as the word
does: ``port: 8080`` and ``"port": 8080`` (YAML, JSON), ``PORT=8080`` and ``API_PORT=8080``
(an environment variable: its last part), ``localhost:8000``, ``127.0.0.1:8000`` and a
URL's ``//api:8000`` or ``@db:5432`` (a host and its port).
"HTTP 403" is a status, and so is "404 Not Found" (a code's reason phrase after it).
"The admin UI listens on port 8080." was supported against "Set API_PORT=8080 for the
API and ADMIN_PORT=8443 for the admin UI."."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._text import content_words
from ._http import is_status_code, phrased

_WORDS = (
    "port", "version", "release", "step", "page", "chapter", "room", "gate", "platform",
    "route", "flight", "line", "level", "stage", "phase", "tier", "round", "episode",
    "error", "status", "code",
)  # fmt: skip
_WORD_OF = {content_words(w)[0]: w for w in _WORDS}
LABELS = frozenset(_WORD_OF)
"""The labels, stemmed as units are."""

_LIST_JOINS = frozenset({",", "and", "or", "to", "-", "through"})
_NUMBER_WORDS = frozenset({"number", "no", "#"})
_ASSIGNS = frozenset({":", "=", '"', "'"})
"""Between a configuration key and its value: ``port: 8080``, ``PORT=8080``, ``"port": 80``."""
_HOSTS = frozenset({"localhost"})
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_STATUS = content_words("status")[0]
_STATUS_WORDS = frozenset(content_words("status code error"))
"""Words that name an HTTP code 100-599 alike: "status 404", ``status_code=404``,
``"code": 404`` and "error 404" are one status."""
_PORT = content_words("port")[0]
_HTTP = frozenset({"http", "https"})


def _label_of(word: str, number: str, *, host: bool) -> str | None:
    """The label ``word`` gives the number after it: its stem, or an environment
    variable's last part (``API_PORT``), a host's port, HTTP's status (a code 100-599)."""
    if host:
        return _PORT
    http = is_status_code(number)
    if word in _HTTP:
        return _STATUS if http else None
    stems = content_words(word.rsplit("_", 1)[-1]) if word else []
    if stems and stems[0] in _STATUS_WORDS and http:
        return _STATUS
    return stems[0] if stems and stems[0] in LABELS else None


def label_word(stem: str) -> str:
    """A label as it is written ("release" for the stem "releas")."""
    return _WORD_OF.get(stem, stem)


def label_before(
    tokens: Sequence[str], i: int, previous: tuple[str, str | None] | None
) -> str | None:
    """The label of the number at ``tokens[i]``: the word right before it, or before
    "number" ("port number 5432"); else the label of the number a list joins it to
    (``previous``: that number and its unit; "ports 80 and 443")."""
    before = list(tokens[max(0, i - 4) : i])
    assigned = bool(before[-1:]) and before[-1] in _ASSIGNS
    while before[-1:] and before[-1] in _ASSIGNS:
        before.pop()
    if before[-1:] and before[-1] in _NUMBER_WORDS:
        before = before[:-1]
    written = before[-1] if before else ""
    host = written in _HOSTS or bool(_IPV4.fullmatch(written)) or before[-2:-1] in (["@"], ["/"])
    label = _label_of(written, tokens[i], host=assigned and host)
    if label is not None:
        return label
    if phrased(tokens, i):
        return _STATUS
    if previous is not None and previous[1] in LABELS:
        k = i - 1
        while k >= 0 and tokens[k] in _LIST_JOINS:
            k -= 1
        if 0 <= k < i - 1 and tokens[k] == previous[0]:
            return previous[1]
    return None


__all__ = ["LABELS", "label_before", "label_word"]
