"""HTTP status codes as a claim writes them: "HTTP 403" is status 403, and "404 Not Found"
states nothing the code does not. Read as names, "HTTP" and "Found" were facts no source
states ("A bad token gets HTTP 403." scored 0 against "… gets status 403"; "It returns a
404 Not Found." against "The server returns HTTP 404"), and "HTTP 401" was no status to
clash with "status 403"."""

from __future__ import annotations

import re
from collections.abc import Sequence

REASON_PHRASES = {
    "200": ("OK",), "201": ("Created",), "202": ("Accepted",), "204": ("No Content",),
    "301": ("Moved Permanently",), "302": ("Found",), "303": ("See Other",),
    "304": ("Not Modified",), "307": ("Temporary Redirect",), "308": ("Permanent Redirect",),
    "400": ("Bad Request",), "401": ("Unauthorized",), "403": ("Forbidden",),
    "404": ("Not Found",), "405": ("Method Not Allowed",), "406": ("Not Acceptable",),
    "408": ("Request Timeout",), "409": ("Conflict",), "410": ("Gone",),
    "413": ("Content Too Large", "Payload Too Large"),
    "415": ("Unsupported Media Type",),
    "422": ("Unprocessable Content", "Unprocessable Entity"),
    "429": ("Too Many Requests",), "500": ("Internal Server Error",),
    "501": ("Not Implemented",), "502": ("Bad Gateway",), "503": ("Service Unavailable",),
    "504": ("Gateway Timeout",),
}  # fmt: skip
"""The reason phrases of RFC 9110, section 15 (429: RFC 6585; 413 and 422 also by their
older names, RFC 7231 and RFC 4918)."""


def is_status_code(number: str) -> bool:
    """Whether ``number`` (digits) can be an HTTP status code: 100-599."""
    return len(number) == 3 and "100" <= number <= "599"


_HTTP_BEFORE = re.compile(
    r"\bHTTPS?(?:\s+(?=(?:status|error|code)\s+[1-5]\d\d\b)|(?=\s+[1-5]\d\d\b))"
)
_PHRASED = re.compile(r"\b([1-5]\d\d)(\s+)([A-Z][A-Za-z]*(?:\s+[A-Z][A-Za-z]*){0,3})")


_PHRASE_WORDS = {
    code: [tuple(p.lower().split()) for p in phrases] for code, phrases in REASON_PHRASES.items()
}


def phrased(tokens: Sequence[str], i: int) -> bool:
    """Whether the number at ``tokens[i]`` (lower-cased words) is a status code followed by
    its reason phrase ("404 not found", "401 unauthorized"): a source's "unknown routes get
    404 Not Found" states status 404, as "HTTP 404" does."""
    after = tuple(tokens[i + 1 : i + 5])
    return any(after[: len(p)] == p for p in _PHRASE_WORDS.get(tokens[i], ()))


def as_status(text: str) -> str:
    """``text`` with "HTTP" before a status code read as the word "status" ("HTTP 403",
    "HTTP status 403"), and a code's own reason phrase after it dropped ("404 Not Found")."""
    text = _HTTP_BEFORE.sub(lambda m: "" if m.group(0).rstrip() != m.group(0) else "status", text)
    return _PHRASED.sub(_without_phrase, text)


def _without_phrase(match: re.Match[str]) -> str:
    code, space, words = match.groups()
    for phrase in REASON_PHRASES.get(code, ()):
        if words == phrase or words.startswith(f"{phrase} "):
            return f"{code}{space}{words[len(phrase) :].lstrip()}".rstrip()
    return match.group(0)


__all__ = ["REASON_PHRASES", "as_status", "is_status_code", "phrased"]
