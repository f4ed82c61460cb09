"""Is a message a closing or an acknowledgement ("thanks, that's all!", "ok got it, cheers",
"great, that helps a lot", "nevermind") rather than something to look up?

Three steps, cheapest first:

1. **A question signal** means look it up: a question mark, or a clause that opens with a
   question word, an auxiliary or a request verb ("thanks - how do I disable SSL
   verification?", "got it, but what if ...", "explain the auth flow").
2. **The word list** (fast path): every word is a closing word or a filler ("ok got it,
   cheers", "thanks, that's all!"). A single word decides here alone: "nope" is a
   closing, "anything", "more" or "timeout" a keyword to look up.
3. **The local embedding model**, for what the list does not cover ("you're a lifesaver",
   "that clears it up"): the message is compared with prototype closings and prototype
   questions (cosine of all-MiniLM-L6-v2 vectors); it is a closing when its nearest closing
   prototype is at least :data:`FLOOR` similar and nearer than its nearest question
   prototype by :data:`MARGIN`. Keyword queries ("retry policy", "HB-601") sit nearer the
   questions; off-topic ones ("café crème brûlée", "warm up") are near neither, which the
   floor keeps from counting as closings. Without the model (the
   ``local`` extra not installed) a message is a closing when it has a closing cue word and
   at most one other content word.

Only short messages (:data:`MAX_WORDS`) can be closings. The prototypes, the margin and
the floor were set on the issue's examples, a dozen other closings and a dozen off-topic
keyword queries (BEIR-style claims, "warm up"); ``tests/unit/_closings_heldout.py``
holds phrasings never used for that, and the tests report accuracy on them.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from langchain_core.embeddings import Embeddings

from kbgraph._base.text import QUESTION_STOP_WORDS, word_set, words

MAX_WORDS = 12
MARGIN = 0.15
FLOOR = 0.30
ClosingPath = Literal["signal", "words", "model", "cue"]

_QUESTION_OPENERS = word_set(
    """
    what what's whats how how's why where where's when which who whose whom is are was were
    does do did can could should would shall may might any explain show list tell give describe
    compare find define walk help
    """
)
_LEADS = word_set("and but so ok okay then now also hmm um well cool great thanks perfect right")
_CLAUSE = re.compile(r"[,.;:!—–]+|\s-\s|\s-(?=\w)")

_CUES = word_set(
    """
    thanks thank thx ty tysm cheers great perfect awesome cool nice ok okay k kk alright
    got gotcha understood noted nevermind nvm appreciated appreciate brilliant excellent sweet
    super fantastic wonderful lovely bye goodbye cya helpful helps helped clear clears solved
    sorted done enough fine good set lifesaver nope nah
    """
)
_FILLERS = word_set(
    """
    that's that it's it all for so much very a lot the this was is be now then i i'm im me my
    you you're your we just really exactly what needed need wanted looking everything anything
    else nothing more no worries problem mind never makes make sense sounds works work for
    today help oh ah see will try again one have day thing up indeed totally definitely
    """
)

CLOSING_PROTOTYPES = (
    "thanks, that's all!",
    "ok got it, cheers",
    "great, that helps a lot",
    "nevermind",
    "thank you so much",
    "that answers my question",
    "perfect, thanks",
    "goodbye",
    "ok",
    "I understand now",
    "no more questions",
    "that was helpful",
    "all good",
    "sounds great",
    "appreciate it",
    "bye for now",
    "okay, I get it",
    "that's what I was looking for",
    "never mind, it's not important",
    "awesome",
)
QUESTION_PROTOTYPES = (
    "how do I configure retries?",
    "what is the default timeout",
    "and the default timeout?",
    "error code meaning",
    "retry policy configuration",
    "where is the config file",
    "does it support proxies",
    "API key rotation",
    "webhook signature verification",
    "how to install it",
    "connection pool limits",
    "what about the rate limit",
    "an example request",
    "thanks - how do I disable SSL verification?",
    "authentication settings",
    "explain the deployment steps",
)


@dataclass(frozen=True)
class ClosingVerdict:
    closing: bool
    path: ClosingPath
    reason: str


def question_signal(text: str) -> bool:
    """A question mark, or a clause opening with a question word, an auxiliary or a request
    verb (after leads such as "and", "ok", "thanks")."""
    if "?" in text or "？" in text:
        return True
    for clause in _CLAUSE.split(text.casefold()):
        ws = words(clause)
        while ws and ws[0] in _LEADS:
            ws = ws[1:]
        if ws and ws[0] in _QUESTION_OPENERS:
            return True
    return False


def _content(ws: list[str]) -> list[str]:
    return [w for w in ws if w not in _CUES and w not in _FILLERS and w not in QUESTION_STOP_WORDS]


class ClosingDetector:
    """Closings by the three steps of the module docstring. ``embeddings`` (default: the
    packaged local model when installed, loaded on first need) serves step 3; ``None``
    means the cue-word rule instead."""

    def __init__(self, embeddings: Embeddings | None = None) -> None:
        self.embeddings = embeddings
        self._prototypes: tuple[np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    def verdict(self, text: str) -> ClosingVerdict:
        ws = words(text)
        if not ws or len(ws) > MAX_WORDS:
            return ClosingVerdict(False, "words", "not a short message")
        if question_signal(text):
            return ClosingVerdict(False, "signal", "the message asks something")
        content = _content(ws)
        if not content and any(w in _CUES for w in ws):
            return ClosingVerdict(True, "words", "only closing words")
        if len(ws) == 1:
            # One word that is no closing word ("anything", "more", "timeout") is a
            # keyword to look up: the model's nearest prototype means little for it.
            return ClosingVerdict(False, "words", "a single word that is no closing word")
        if self.embeddings is None:
            closing = any(w in _CUES for w in ws) and len(content) <= 1
            return ClosingVerdict(closing, "cue", f"closing cue, {len(content)} other word(s)")
        closing_sim, question_sim = self._similarities(text)
        return ClosingVerdict(
            closing_sim >= FLOOR and closing_sim - question_sim > MARGIN,
            "model",
            f"nearest closing {closing_sim:.2f}, nearest question {question_sim:.2f}",
        )

    def is_closing(self, text: str) -> bool:
        return self.verdict(text).closing

    def _similarities(self, text: str) -> tuple[float, float]:
        assert self.embeddings is not None
        closings, questions = self._prototype_vectors()
        vector = _unit(np.asarray(self.embeddings.embed_query(text), dtype=np.float32))
        return float(np.max(closings @ vector)), float(np.max(questions @ vector))

    def _prototype_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            if self._prototypes is None:
                assert self.embeddings is not None
                both = self.embeddings.embed_documents([*CLOSING_PROTOTYPES, *QUESTION_PROTOTYPES])
                matrix = _unit(np.asarray(both, dtype=np.float32))
                n = len(CLOSING_PROTOTYPES)
                self._prototypes = (matrix[:n], matrix[n:])
            return self._prototypes


def _unit(a: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / np.where(norms == 0, 1.0, norms)


@lru_cache(maxsize=1)
def default_detector() -> ClosingDetector:
    """The process-wide detector: with the packaged local model when sentence-transformers
    and the model package are installed, else with the cue-word rule."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return ClosingDetector(None)
    from kbgraph.errors import ConfigError
    from kbgraph.retrieval._internal import LocalEmbeddings, packaged_model_dir

    try:
        packaged_model_dir()
    except ConfigError:
        return ClosingDetector(None)
    return ClosingDetector(LocalEmbeddings())


__all__ = [
    "CLOSING_PROTOTYPES",
    "FLOOR",
    "MARGIN",
    "MAX_WORDS",
    "QUESTION_PROTOTYPES",
    "ClosingDetector",
    "ClosingVerdict",
    "default_detector",
    "question_signal",
]
