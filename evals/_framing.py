"""Meta-framing: the words of a summary or answer about the source rather than about what
the source says — "Here is a summary of the passage:", "The article discusses how …",
"According to the text, …", "…, the report says.".

A frame asserts nothing a source could support or contradict: judged as a claim, its
"article" and "discusses" count as unsupported words in every summary that uses one, so
well-grounded summaries score below terse ones. :func:`without_framing` cuts the frame and
keeps what it frames ("The article discusses how the council rejected the plan." claims
"The council rejected the plan."); a sentence that is nothing but a frame ("Here is a
summary of the article:") is no claim at all. A frame is recognised by a word for the
source (``article``, ``passage``, ``document``, ``transcript`` …) in a fixed position
before a reporting verb or after "according to" — a reporting verb with any other subject
("The minister said that …") is content and stays.
"""

from __future__ import annotations

import re

SOURCE_NOUNS = (
    "article", "passage", "text", "document", "story", "report", "piece", "excerpt",
    "source", "sources", "context", "transcript", "conversation", "dialogue", "dialog",
    "discussion", "meeting", "podcast", "episode", "interview", "email", "e-mail", "paper",
    "abstract", "summary", "content", "author", "writer", "narrator", "speaker", "speakers",
    "news", "news article", "news story", "news report", "snippet", "extract", "input",
    "texte", "document", "passage", "artikel", "text", "artículo", "texto", "documento",
)  # fmt: skip
"""Words naming the source itself (English, then French, German and Spanish)."""

_REPORTING = (
    r"(?:(?:discuss|describ|report|say|said|state|explain|highlight|mention|note|cover|detail|"
    r"outline|present|reveal|suggest|argu|claim|provid|focus|talk|deal|center|centr|revolv|"
    r"touch|address|examin|explor|emphasi[sz]|indicat|show|tell|told|recount|summari[sz]|"
    r"concern|inform|shar|offer|delv|introduc|review|recap|chronicl|portray|depict|"
    r"expliqu|décri|racont|présent|indiqu|affirm|soulign|évoqu|trait|parl|"
    r"beschreib|erklär|bericht|behandel|zeig|erzähl|explic|describ|present|señal|relat|trat|habl)"
    r"\w*"
    r"(?:\s+(?:on|about|with|around|into|over|us|readers|the\s+reader))?"
    r"|(?:is|was|are|were)\s+(?:about|(?:a|an)\s+(?:summary|report|account|overview|recap)\s+of))"
)
"""What a source does in a frame: the reporting verbs ("discusses", "focuses on", "tells
us"; French, German and Spanish stems after the English ones), and "is about" / "is a
summary of"; never a bare "is" ("The report was published on Monday" is news about a
report)."""

_SOURCE = "(?:" + "|".join(sorted(map(re.escape, set(SOURCE_NOUNS)), key=len, reverse=True)) + ")"
_DETERMINER = (
    r"(?:the|this|that|these|those|our|its|le|la|l'|ce|cet|cette|der|die|das|dieser|diese|"
    r"el|este|esta)\s*"
)
_ADJECTIVES = r"(?:(?:given|above|provided|following|original|full|entire|whole|short|brief)\s+)?"
_SUBJECT = rf"{_DETERMINER}{_ADJECTIVES}{_SOURCE}\b(?:\s*\([^)]*\))?"

_LEAD_FRAMES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "Here is a (brief) summary of the article:" and the rest of the sentence.
        r"^(?:here\s+is|here's|below\s+is|the\s+following\s+is|this\s+is)\s+(?:a|an|the|my)"
        r"\s+(?:[\w-]+\s+){0,3}?(?:summary|overview|recap|synopsis|rundown)\b[^:]*(?::\s*|$)",
        # "In summary, …", "Overall, …", "In short: …"
        r"^(?:in\s+summary|in\s+conclusion|in\s+short|in\s+brief|overall|to\s+summari[sz]e|"
        r"en\s+résumé|zusammenfassend|en\s+resumen)\s*[,:]\s*",
        # "According to the article, …", "As reported in the text, …", "In the passage, …"
        r"^(?:according\s+to|as\s+(?:stated|reported|described|mentioned|noted|explained|"
        r"outlined|discussed)\s+in|in|per|from|selon|laut|según)\s+" + _SUBJECT + r"\s*[,:]?\s*",
        # "The article discusses (how|that) …", "This document is about …", "It also notes …"
        r"^(?:" + _SUBJECT + r"|it)\s+(?:also\s+|further\s+|then\s+|mainly\s+|primarily\s+|"
        r"briefly\s+)?"
        + _REPORTING
        + r"(?:\s*,?\s*(?:that|how|whether|why|what|que|qu'|dass|wie|cómo)\b)?\s*[,:]?\s*",
    )
)
"""Frames at the start of a sentence; what follows them is the claim."""

_TRAIL_FRAME = re.compile(
    r"\s*,?\s*(?:according\s+to|as\s+(?:stated|reported|described|mentioned|noted)\s+in|"
    r"(?:as\s+)?" + _SUBJECT + r"\s+(?:says|said|reports|reported|states|stated|notes|noted|"
    r"explains|explained|mentions|mentioned))(?:\s+" + _SUBJECT + r")?\s*(?=[.!?。]*$)",
    re.IGNORECASE,
)
"""A frame at the end: "…, according to the article." / "…, the report says."."""

_SUBJECT_START = re.compile(rf"^{_SUBJECT}(?:\s|$)", re.IGNORECASE)
_SUMMARY_LABELS = frozenset({"summary", "tl;dr", "tldr", "overview", "key points", "résumé"})
_LABEL = re.compile(r"^(?P<label>[^:]{1,80}):\s*(?P<rest>.*)$", re.DOTALL)
_LABEL_WORDS = 10
_MAX_FRAMES = 3  # "The document is a summary of a conversation about …"


def is_frame_label(text: str) -> bool:
    """``text`` is a short label that announces a summary or names the source ("Here is a
    summary of the passage:", "The article makes three points:", "Summary:"), not a
    statement ("Harbor retries these codes:")."""
    stripped = text.strip().rstrip(":").strip()
    if not stripped or len(stripped.split()) > _LABEL_WORDS:
        return False
    return bool(
        _LEAD_FRAMES[0].match(stripped)
        or _SUBJECT_START.match(stripped)
        or stripped.lower() in _SUMMARY_LABELS
    )


def without_framing(sentence: str) -> str:
    """``sentence`` with its meta-framing cut (see the module docstring); ``""`` when it
    was nothing but a frame."""
    text = sentence.strip()
    label = _LABEL.match(text)
    if label and is_frame_label(label.group("label")):
        text = label.group("rest").strip()
    for _ in range(_MAX_FRAMES):
        cut = _cut_lead(text)
        if cut == text:
            break
        text = cut
    text = _TRAIL_FRAME.sub("", text).strip()
    if (
        text != sentence.strip()
        and text
        and sentence.rstrip()[-1:] in ".!?。"
        and (text[-1:] not in ".!?。")
    ):
        text += sentence.rstrip()[-1]
    return text[0].upper() + text[1:] if text[:1].islower() else text


def _cut_lead(text: str) -> str:
    for pattern in _LEAD_FRAMES:
        match = pattern.match(text)
        if match and match.end() > 0:
            return text[match.end() :].strip()
    return text


__all__ = ["SOURCE_NOUNS", "is_frame_label", "without_framing"]
