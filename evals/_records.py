"""Typed records of an evaluation: data-set rows, what the agent produced, claims and their
verdicts, metric results and per-row results.

Every record has ``to_dict`` giving plain JSON (snake_case for source positions, as every
citation record of kbgraph: ``line_start``, ``line_end``, ``chunk_id``), because results are
written as JSON lines. The camelCase of before 0.2 (``lineStart`` ...) still reads, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from kbgraph._base.camel import camel, snake_keys, to_camel_dict
from kbgraph._base.faces import shown_as

from ._metrics import metric_names

Verdict = Literal["supported", "not_supported", "contradicted"]
VERDICTS: tuple[Verdict, ...] = ("supported", "not_supported", "contradicted")

MetricName = str
"""A registered metric's name (``faithfulness``, ``context_recall``, ``context_precision``,
``answer_relevance``, ``answer_correctness``, or one registered since): ``metric_names()``."""

MetricStatus = Literal["scored", "undetermined", "failed"]
"""``scored``: a number in [0, 1]. ``undetermined``: the metric does not apply to this row
(no claims, no reference, no context) and ``reason`` says why. ``failed``: an error."""

RowStatus = Literal["ok", "failed"]


@dataclass(frozen=True, slots=True)
class GoldSource:
    """Where the answer to a question is written: a path with an optional line range
    (1-based, inclusive), or a document / chunk id; or a group of alternatives
    (``any_of``) of which one suffices.

    A row's gold sources are all required: source recall is the share of them retrieved.
    Where the docs say the same thing in two places (a settings table and the prose below
    it), list the places as one ``{"any_of": [...]}`` source, so that finding either
    counts in full and finding one is not reported as half a recall."""

    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    doc_id: str | None = None
    any_of: tuple[GoldSource, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GoldSource:
        data = snake_keys(data, "a gold source", stacklevel=2)
        if "any_of" in data:
            return cls(any_of=tuple(cls.from_dict(item) for item in data["any_of"]))
        start, end = data.get("line_start"), data.get("line_end")
        return cls(
            path=_opt_str(data.get("path", data.get("source"))),
            line_start=int(start) if start is not None else None,
            line_end=int(end) if end is not None else (int(start) if start is not None else None),
            doc_id=_opt_str(data.get("id", data.get("doc_id"))),
        )

    def to_dict(self) -> dict[str, Any]:
        if self.any_of:
            return {"any_of": [g.to_dict() for g in self.any_of]}
        out: dict[str, Any] = {}
        if self.path is not None:
            out["path"] = self.path
        if self.line_start is not None:
            out["line_start"] = self.line_start
            out["line_end"] = self.line_end
        if self.doc_id is not None:
            out["id"] = self.doc_id
        return out


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved source as the answer saw it (``n`` numbered as in the context).
    Built from a subgraph citation ``{n, chunk_id, source, kb, line_start, line_end, score,
    text}`` or from a plain string of a pre-computed row."""

    n: int
    text: str
    source: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    id: Annotated[str | None, Field(alias="chunk_id")] = None
    kb: str | None = None
    score: float | None = None

    @classmethod
    def from_any(cls, value: Any, position: int) -> Passage:
        if isinstance(value, str):
            return cls(n=position, text=value)
        if not isinstance(value, Mapping):
            raise TypeError(f"a context must be a string or an object, not {type(value)}")
        value = snake_keys(value, "a context passage (citation)", stacklevel=2)
        start, end = value.get("line_start"), value.get("line_end")
        score = value.get("score")
        return cls(
            n=int(value.get("n") or position),
            text=str(value.get("text") or value.get("content") or ""),
            source=_opt_str(value.get("source", value.get("path"))),
            line_start=int(start) if start is not None else None,
            line_end=int(end) if end is not None else None,
            id=_opt_str(value.get("chunk_id", value.get("id"))),
            kb=_opt_str(value.get("kb")),
            score=float(score) if score is not None else None,
        )

    @property
    def label(self) -> str:
        if self.source is None:
            return f"[{self.n}]"
        lines = f":{self.line_start}-{self.line_end}" if self.line_start is not None else ""
        return f"[{self.n}] {self.source}{lines}"

    def to_dict(self) -> dict[str, Any]:
        return to_camel_dict(self)


@dataclass(frozen=True, slots=True)
class EvalRow:
    """One data-set row. ``answer``/``contexts`` are set for pre-computed rows, which are
    scored without running the agent. ``context_note`` says why a pre-computed row has no
    contexts (none under any key the data set reader knows): the metrics that need them are
    then undetermined with that reason, not 0. ``error`` says why a line of the data set is
    not a valid row: the row fails with that reason and the others run."""

    id: str
    question: str
    reference: str | None = None
    gold_sources: tuple[GoldSource, ...] = ()
    answer: str | None = None
    contexts: tuple[Passage, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    context_note: str | None = None
    error: str | None = None

    @property
    def precomputed(self) -> bool:
        return self.answer is not None

    @property
    def needs_agent(self) -> bool:
        return self.answer is None and self.error is None


@dataclass(frozen=True, slots=True)
class AgentOutput:
    """What one agent run produced, read from the chat agent's final state."""

    answer: str
    passages: tuple[Passage, ...] = ()
    context: str = ""
    grounded: bool | None = None


@dataclass(frozen=True, slots=True)
class EvalRecord:
    """Everything an evaluator may look at for one question. ``context_note`` is set when
    no contexts were given at all (rather than an empty retrieval): why, for the metrics
    that need them to report "undetermined"."""

    question: str
    answer: str
    passages: tuple[Passage, ...] = ()
    reference: str | None = None
    gold_sources: tuple[GoldSource, ...] = ()
    context_note: str | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """A self-contained statement of an answer, citation markers removed; ``citations``
    are the source numbers its markers named (empty when it cites nothing)."""

    text: str
    citations: tuple[int, ...] = ()


Cause = Literal[
    "",
    "supported",
    "quoted",
    "number_mismatch",
    "negation",
    "role_swap",
    "entity_swap",
    "unsupported_number",
    "missing_words",
    "no_aligned_sentence",
    "empty_context",
    "unknown_citation",
    "wrong_citation",
    "repeated",
    "unstated_fact",
]
"""Why a verdict was given, for code that acts on it (an answer check that flags a made-up
number): ``number_mismatch`` (the source has another number for the same thing),
``negation`` (it says the opposite), ``role_swap`` (two names trade places),
``entity_swap`` (the source says it of another name), ``unsupported_number`` (a number the
source does not state for this), ``missing_words`` (words the source lacks or a paraphrase
too far), ``no_aligned_sentence`` (no source sentence shares the claim's words),
``quoted`` (word for word from the source), ``supported``; set by the faithfulness metric:
``unknown_citation`` (it cites a source the context lacks), ``wrong_citation`` (not its
cited source but another supports it), ``repeated`` (it repeats an earlier claim),
``unstated_fact`` (a number, date, name, code or negation its sources do not state about
the same subject: ``judges._facts``; on a claim the judge contradicts, a number, name or
code: "9 times" where the source says 4),
``empty_context``; ``""`` when the judge does not
say (an LLM judge's verdict has its reason in words only)."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judge's verdict on one claim against one context. ``score`` is the judge's
    confidence that the claim is supported, in [0, 1] (used for AUROC). ``reason`` says
    why for a person ("number mismatch: 49 euro ≠ 29 euro"), ``evidence`` is the source
    sentence the claim was aligned with (or the one that contradicts it; ``""`` when no
    sentence shares its words), ``cause`` the reason's kind (:data:`Cause`)."""

    verdict: Verdict
    score: float
    reason: str = ""
    evidence: str = ""
    cause: Cause = ""


@dataclass(frozen=True, slots=True)
class Relevance:
    """A judge's view of how relevant a text is to a question: ``relevant`` is the binary
    decision, ``score`` the graded one in [0, 1]."""

    relevant: bool
    score: float
    reason: str = ""


@camel
@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    """A claim, the sources it was judged against, and the verdict."""

    claim: str
    verdict: Verdict
    score: float
    citations: tuple[int, ...] = ()
    judged_against: tuple[int, ...] = ()
    reason: str = ""
    evidence: str = ""
    cause: Cause = ""

    def to_dict(self) -> dict[str, Any]:
        return {**to_camel_dict(self), "score": round(self.score, 4)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClaimVerdict:
        """A verdict read back from ``results.jsonl``."""
        verdict = data.get("verdict")
        if verdict not in VERDICTS:
            raise ValueError(
                f"a claim verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}"
            )
        return cls(
            claim=str(data.get("claim", "")),
            verdict=verdict,
            score=float(data.get("score") or 0.0),
            citations=tuple(int(n) for n in data.get("citations") or ()),
            judged_against=tuple(int(n) for n in data.get("judgedAgainst") or ()),
            reason=str(data.get("reason") or ""),
            evidence=str(data.get("evidence") or ""),
            cause=data.get("cause") or "",
        )


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric on one row. ``score`` is ``None`` unless ``status == "scored"``."""

    name: MetricName
    status: MetricStatus
    score: float | None = None
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def scored(
        cls, name: MetricName, score: float, reason: str = "", **details: Any
    ) -> MetricResult:
        value = float(score)
        if not math.isfinite(value):
            # A NaN would otherwise be clamped into a plausible 0.0 or 1.0.
            raise ValueError(
                f"{name} score is {value}, not a number in [0, 1]; report the row as "
                "undetermined (MetricResult.undetermined) with the reason instead."
            )
        return cls(name, "scored", min(1.0, max(0.0, value)), reason, details)

    @classmethod
    def undetermined(cls, name: MetricName, reason: str, **details: Any) -> MetricResult:
        return cls(name, "undetermined", None, reason, details)

    @classmethod
    def failed(cls, name: MetricName, error: BaseException) -> MetricResult:
        return cls(name, "failed", None, f"{type(error).__name__}: {error}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "score": None if self.score is None else round(self.score, 4),
            "reason": self.reason,
            **_plain(dict(self.details)),
        }

    @classmethod
    def from_dict(cls, name: MetricName, data: Mapping[str, Any]) -> MetricResult:
        """A metric read back from ``results.jsonl`` (claim verdicts become
        :class:`ClaimVerdict` again)."""
        details = {k: v for k, v in data.items() if k not in ("status", "score", "reason")}
        for key in _VERDICT_LISTS:
            if isinstance(details.get(key), list):
                details[key] = [ClaimVerdict.from_dict(v) for v in details[key]]
        status = data.get("status")
        if status not in ("scored", "undetermined", "failed"):
            raise ValueError(f"{name}: unknown metric status {status!r}")
        score = data.get("score")
        return cls(
            name,
            status,
            None if score is None else float(score),
            str(data.get("reason") or ""),
            details,
        )


@dataclass(frozen=True, slots=True)
class RowResult:
    """One data-set row after the run: what the agent said and every metric."""

    row_id: str
    question: str
    status: RowStatus
    answer: str | None = None
    passages: tuple[Passage, ...] = ()
    metrics: Mapping[str, MetricResult] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    reference: str | None = None
    gold_sources: tuple[GoldSource, ...] = ()
    notes: tuple[str, ...] = ()  # what the judge was not given whole (kbgraph.evals._bounds)

    def to_dict(self) -> dict[str, Any]:
        """One line of ``results.jsonl``; it reads back as a pre-computed data-set row, so
        a run can be re-scored (with another judge) from its results alone."""
        return {
            "id": self.row_id,
            "question": self.question,
            "status": self.status,
            "error": self.error,
            "reference": self.reference,
            "gold_sources": [g.to_dict() for g in self.gold_sources],
            "answer": self.answer,
            # With the text, a verdict can be reviewed or re-scored from the file alone.
            "citations": [p.to_dict() for p in self.passages],
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowResult:
        """A line of ``results.jsonl`` read back (``kbgraph eval --resume``)."""
        status = data.get("status")
        if status not in ("ok", "failed"):
            raise ValueError(f"a result row's status must be 'ok' or 'failed', not {status!r}")
        metrics = data.get("metrics") or {}
        return cls(
            row_id=str(data["id"]),
            question=str(data.get("question") or ""),
            status=status,
            answer=data.get("answer"),
            passages=tuple(
                Passage.from_any(p, i) for i, p in enumerate(data.get("citations") or [], start=1)
            ),
            metrics={
                name: MetricResult.from_dict(name, metrics[name])
                for name in metric_names()
                if isinstance(metrics.get(name), Mapping)
            },
            error=data.get("error"),
            seconds=float(data.get("seconds") or 0.0),
            reference=data.get("reference"),
            gold_sources=tuple(GoldSource.from_dict(g) for g in data.get("gold_sources") or ()),
            notes=tuple(str(n) for n in data.get("notes") or () if isinstance(n, str)),
        )

    def flat(self) -> dict[str, Any]:
        """One flat row for a table: id, status, question, answer, error, and per metric its
        score, status and reason (``faithfulness``, ``faithfulness_status`` …)."""
        out: dict[str, Any] = {
            "id": self.row_id,
            "status": self.status,
            "question": self.question,
            "answer": self.answer,
            "error": self.error,
            "seconds": self.seconds,
        }
        for name in metric_names():
            metric = self.metrics.get(name)
            out[name] = None if metric is None else metric.score
            out[f"{name}_status"] = None if metric is None else metric.status
            out[f"{name}_reason"] = None if metric is None else metric.reason
        return out


@shown_as("kbgraph.evals")
class EvalResults(list[RowResult]):
    """The results of a batch run, in data-set order: a list of :class:`RowResult` that
    also converts to a table."""

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with one row per data-set row (:meth:`RowResult.flat`).
        Needs pandas (``pip install 'kbgraph[eval]'``)."""
        try:
            import pandas as pd
        except ImportError as exc:  # an optional dependency
            from kbgraph.errors import EvaluationError

            raise EvaluationError(
                "results.to_pandas() needs pandas; install it with pip install 'kbgraph[eval]' "
                "(or pip install pandas)."
            ) from exc
        return pd.DataFrame([row.flat() for row in self])


@dataclass
class TokenUsage:
    """Tokens a judge spent; safe to add to from several threads."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.calls += 1

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "calls": self.calls,
        }


_VERDICT_LISTS = ("claims", "reference_claims", "answer_claims")


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _plain(value: Any) -> Any:
    """Records inside ``details`` become dicts, tuples become lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


__all__ = [
    "VERDICTS",
    "AgentOutput",
    "Cause",
    "Claim",
    "ClaimVerdict",
    "EvalRecord",
    "EvalResults",
    "EvalRow",
    "GoldSource",
    "Judgement",
    "MetricName",
    "MetricResult",
    "MetricStatus",
    "Passage",
    "Relevance",
    "RowResult",
    "RowStatus",
    "TokenUsage",
    "Verdict",
]
