"""Embedding many texts robustly: batches, retries with backoff, input-length caps, and
isolation of the inputs a provider refuses, so one bad chunk never fails an indexing run."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from kbgraph.errors import DimensionMismatchError, EmbeddingError, KbgraphError

from ._calls import call_within, one_line
from ._identity import describe_embeddings
from ._plan import BatchPlan, InputLimited, length_order, make_plan
from ._retry import ErrorVerdict, backoff_delay, classify_error
from ._spec import EmbeddingInfo

if TYPE_CHECKING:  # the base class costs ~0.18 s to import (langchain_core's callbacks)
    from langchain_core.embeddings import Embeddings

logger = logging.getLogger("kbgraph.retrieval._embeddings")
_T = TypeVar("_T")
_PROBE_TEXT = "probe"

_HINTS = {
    401: "check the API key",
    403: "check the API key's permissions",
    404: "check the model or deployment name and the base URL",
}


@dataclass(frozen=True, slots=True)
class EmbedOutcome:
    """``vectors`` is float32 ``(n, d)``, rows L2-normalised; rows of ``failed`` are zeros."""

    vectors: np.ndarray
    failed: list[int] = field(default_factory=list)
    truncated: int = 0


@dataclass(frozen=True, slots=True)
class EmbeddedBatch:
    """One batch of ``BatchEmbedder.iter_batches``: row ``k`` of ``vectors`` is the vector
    of text ``indices[k]`` (positions in the caller's list); ``failed`` holds positions."""

    indices: list[int]
    vectors: np.ndarray
    failed: list[int]
    truncated: int = 0  # of this batch's texts, those longer than the model's input
    cut: list[int] = field(default_factory=list)  # their positions (``truncated`` of them)


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean length; all-zero rows stay zero (no division by 0)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def check_dims(
    expected: int,
    actual: int,
    *,
    index_model: str | None = None,
    current_model: str | None = None,
) -> None:
    """Raise ``DimensionMismatchError`` when the current model's vectors do not fit the index."""
    if expected == actual:
        return
    built_by = f" by {index_model}" if index_model else ""
    current = current_model or "the current embedding model"
    raise DimensionMismatchError(
        f"the index was built with {expected}-dimensional vectors{built_by}, but {current} "
        f"gives {actual}-dimensional vectors; re-index with `kbgraph index --rebuild` "
        "or use the original model"
    )


class BatchEmbedder:
    """Wraps any LangChain ``Embeddings``.

    Transient failures (429, 408, 409, 5xx, timeouts, connection errors) are retried up to
    ``max_retries`` times with exponential backoff and jitter, honouring Retry-After; then
    ``EmbeddingError``. A request that timed out is retried at most
    ``max_timeout_retries`` times, as each one costs the client's whole timeout. A batch
    the provider rejects (400, 413, 422) is bisected until the refused inputs are found;
    they, and vectors of the wrong length or not finite, are reported in ``failed`` and
    get zero rows, so one bad input never fails the run. A refusal of the request itself
    is not bisected: when the provider has accepted nothing yet (or refused every input
    of a batch one by one) a one-word probe is sent, and if it is refused too the run
    fails at once (``EmbeddingError``) instead of sending a request per input. A provider
    that accepts the probe but refuses the first real input alone, before any real input
    was accepted, is asked for the run's shortest input alone: refused too, it refuses
    every input (a server's input limit, a proxy that refuses the content) and the run
    fails at once with one line; until a real input is accepted, the warnings of refused
    inputs are held back, so that failure is the only line.
    ``call_timeout`` bounds each call of the ``Embeddings`` object (it runs in a worker
    thread; a call that does not return in time counts as a timed-out request): for
    objects whose own client has no timeout. Texts longer
    than ``max_chars`` are cut; models that know their token limit (:class:`InputLimited`,
    the local sentence-transformers model) truncate further, and one warning per call
    counts the texts cut either way. Texts are embedded longest first, so that each batch
    holds texts of similar length and pads little; results come back in the caller's order.
    ``sleep`` and ``rng`` are injectable for tests."""

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        batch_size: int = 64,
        max_retries: int = 5,
        base_delay: float = 1.0,
        max_delay: float = 30.0,
        max_retry_after: float = 120.0,
        max_chars: int = 8000,
        max_timeout_retries: int = 2,
        call_timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if batch_size < 1 or max_retries < 0 or max_chars < 1:
            raise ValueError("batch_size and max_chars must be ≥ 1 and max_retries ≥ 0")
        self.embeddings = embeddings
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.max_chars = max_chars
        self.max_timeout_retries = max_timeout_retries
        self.call_timeout = call_timeout
        self._sleep = sleep
        self._accepted = False  # the provider answered a request with vectors
        self._refused = 0  # inputs refused one by one so far
        self._real_accepted = False  # a request with a real input (not the probe) succeeded
        self._held: list[str] = []  # warnings of refused inputs until then
        self._shortest: tuple[int, str] | None = None  # the run's shortest input (position)
        self._rng = rng or random.Random()
        self.info: EmbeddingInfo = describe_embeddings(embeddings)
        self.dims: int | None = None  # known after the first successful call

    # -- public API -------------------------------------------------------------------

    def embed(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> EmbedOutcome:
        """Embed ``texts`` in order. ``on_batch`` is called after each batch with the number
        of texts done so far."""
        plan = self._plan(texts)
        truncated = self._warn_truncation(plan)
        # Batches embedded before the vector size was known (all refused) have width 0:
        # the matrix is made at the first batch with vectors, and each batch written into
        # it as it comes (one copy of the vectors, not the batches and the matrix).
        vectors: np.ndarray | None = None
        failed: list[int] = []
        done = 0
        for batch in self._batches(plan):
            if batch.vectors.shape[1]:
                if vectors is None:
                    vectors = np.zeros((len(texts), batch.vectors.shape[1]), dtype=np.float32)
                vectors[batch.indices] = batch.vectors
            failed += batch.failed
            done += len(batch.indices)
            if on_batch is not None:
                on_batch(done)
        if vectors is None:
            vectors = np.zeros((len(texts), self.dims or 0), dtype=np.float32)
        return EmbedOutcome(vectors, sorted(failed), truncated)

    def iter_batches(self, texts: Sequence[str]) -> Iterator[EmbeddedBatch]:
        """Embed batch by batch, longest texts first, yielding each batch as soon as it is
        done (so that callers can persist progress). Raises ``EmbeddingError`` when the
        provider refused every one of several inputs: that is a setting (model name,
        server) gone wrong, not bad data."""
        plan = self._plan(texts)
        self._warn_truncation(plan)
        yield from self._batches(plan)

    def _plan(self, texts: Sequence[str]) -> BatchPlan:
        return make_plan(
            self.embeddings, texts, max_chars=self.max_chars, batch_size=self.batch_size
        )

    def _batches(self, plan: BatchPlan) -> Iterator[EmbeddedBatch]:
        """The plan's batches, embedded (``iter_batches`` without the truncation warning)."""
        count = len(plan.texts)
        last = plan.batches[-1][-1] if plan.batches else None
        self._shortest = (last, plan.texts[last]) if last is not None else None
        embedded_any = False
        for number, indices in enumerate(plan.batches, 1):
            refused_before = self._refused
            rows = self._embed_span([plan.items[i] for i in indices], indices, plan.encode)
            if len(rows) > 1 and self._refused - refused_before == len(rows):
                self._check_requests_accepted(force=True)
            failed = [indices[k] for k, row in enumerate(rows) if row is None]
            embedded_any = embedded_any or len(failed) < len(rows)
            if not embedded_any and count > 1 and number == len(plan.batches):
                raise EmbeddingError(
                    f"{self.info.key} refused every one of the {count} inputs; "
                    "check the model name and the server's logs"
                )
            cut = [i for i in indices if plan.cut[i]]
            yield EmbeddedBatch(indices, self._stack(rows), sorted(failed), len(cut), cut)

    def embed_query(self, text: str) -> np.ndarray:
        """One normalised query vector (``EmbeddingError`` when the provider refuses it)."""
        if len(text) > self.max_chars:
            logger.warning("query truncated to %d characters", self.max_chars)
        query = text[: self.max_chars]
        try:
            vector = self._with_retries(
                lambda: [self._call(lambda: self.embeddings.embed_query(query))], 1
            )
        except _Rejected as rejected:
            raise EmbeddingError(
                f"{self.info.key} refused the query (HTTP {rejected.verdict.status}: "
                f"{one_line(str(rejected.__cause__))}); try rephrasing it"
            ) from rejected.__cause__
        row = self._rows(vector, 1)[0]
        if row is None:
            raise EmbeddingError(
                f"{self.info.key} returned a {self._width_of(vector)}-dim query vector, "
                f"expected {self.dims}; is the server serving another model?"
            )
        matrix = row[None, :]
        if not np.isfinite(matrix).all() or not np.abs(matrix).sum() > 0:
            raise EmbeddingError(f"{self.info.key} returned an unusable (NaN or zero) vector")
        return l2_normalise(matrix)[0]

    def dimensions(self) -> int:
        """Vector size of the model (embeds a probe text when not yet known)."""
        if self.dims is None:
            self.embed_query("dimension probe")
        assert self.dims is not None
        return self.dims

    # -- internals --------------------------------------------------------------------

    def _warn_truncation(self, plan: BatchPlan) -> int:
        """One warning per call, with a count (a line per text would drown the log); the
        count is returned, from the plan's own tokens when the model gave them."""
        count = sum(plan.cut)
        if not count:
            return 0
        if isinstance(self.embeddings, InputLimited):
            # Both cuts apply: the model's own limit, and ours on characters before it.
            limit = f"{self.embeddings.input_limit()}, or {self.max_chars} characters"
        else:
            limit = f"{self.max_chars} characters"
        logger.warning(
            "%d of %d texts are longer than %s's input limit of %s; only their beginning "
            "was embedded (smaller chunks avoid this: --chunk-size)",
            count,
            len(plan.texts),
            self.info.key,
            limit,
        )
        return count

    def _stack(self, rows: list[np.ndarray | None]) -> np.ndarray:
        width = self.dims or 0
        out = np.zeros((len(rows), width), dtype=np.float32)
        for i, row in enumerate(rows):
            if row is not None:
                out[i] = row
        return out

    def _embed_span(
        self,
        texts: list[Any],
        positions: list[int],
        encode: Callable[[list[Any]], object] | None = None,
    ) -> list[np.ndarray | None]:
        """Rows for ``texts`` (at ``positions`` of the caller's list; the model's tokens
        when ``encode`` takes them); ``None`` for the inputs the provider refused, found
        by bisection."""

        def send() -> object:
            if encode is None:
                return self._documents(texts)
            return self._call(lambda: encode(texts))

        try:
            raw = self._with_retries(send, len(texts))
        except _Rejected as rejected:
            self._check_requests_accepted(rejected)
            if len(texts) == 1:
                self._refused += 1
                self._warn(
                    f"input {positions[0]} was refused by {self.info.key} (HTTP "
                    f"{rejected.verdict.status}) and is left out: "
                    f"{one_line(str(rejected.__cause__))}"
                )
                self._check_inputs_accepted(rejected, positions[0])
                return [None]
            half = len(texts) // 2
            return self._embed_span(texts[:half], positions[:half], encode) + self._embed_span(
                texts[half:], positions[half:], encode
            )
        self._accepted = True
        self._real_input_accepted()
        rows = self._rows(raw, len(texts))
        out: list[np.ndarray | None] = []
        for k, row in enumerate(rows):
            # A vector of the wrong length, with NaN/inf, or all zeros cannot be ranked:
            # that one input is left out (reported as failed), like one the provider refused.
            if row is None or not np.isfinite(row).all() or not np.abs(row).sum() > 0:
                what = "of the wrong length" if row is None else "not finite or all zeros"
                logger.warning(
                    "input %d: %s returned a vector %s; it is left out",
                    positions[k],
                    self.info.key,
                    what,
                )
                out.append(None)
            else:
                out.append(l2_normalise(row[None, :])[0])
        return out

    def _documents(self, texts: list[str]) -> object:
        return self._call(lambda: self.embeddings.embed_documents(texts))

    def _call(self, call: Callable[[], _T]) -> _T:
        """``call()``, in a worker thread given ``call_timeout`` seconds when set (an
        ``Embeddings`` object that never returns cannot be interrupted: its thread is left
        behind, a daemon, and the call counts as timed out)."""
        if self.call_timeout is None:
            return call()
        return call_within(call, self.call_timeout, self.info.key)

    def _check_requests_accepted(
        self, rejected: _Rejected | None = None, *, force: bool = False
    ) -> None:
        """Raise ``EmbeddingError`` when the provider refuses requests, not inputs: nothing
        was accepted yet (or ``force``) and a one-word probe is refused as well."""
        if self._accepted and not force:
            return
        try:
            self._with_retries(lambda: self._documents([_PROBE_TEXT]), 1)
        except _Rejected as probe:
            cause = rejected or probe
            raise EmbeddingError(
                f"{self.info.key} refuses the requests themselves (HTTP "
                f"{cause.verdict.status}: {one_line(str(cause.__cause__))}), a one-word probe "
                "included, so no input is to blame; check the model name, the base URL "
                "and the server's logs"
            ) from cause.__cause__
        self._accepted = True

    def _warn(self, message: str) -> None:
        """A refused input's warning; held back while no real input has been accepted
        (the provider may refuse them all: then the run's one line says so instead)."""
        if self._real_accepted:
            logger.warning("%s", message)
        else:
            self._held.append(message)

    def _real_input_accepted(self) -> None:
        if not self._real_accepted:
            self._real_accepted = True
            for message in self._held:
                logger.warning("%s", message)
            self._held.clear()

    def _check_inputs_accepted(self, rejected: _Rejected, position: int) -> None:
        """Raise ``EmbeddingError`` when the provider accepts the probe but no real input:
        the first input refused alone before any was accepted makes the run's shortest
        input be sent alone; refused too, every input would be (a request per input)."""
        if self._real_accepted or self._shortest is None or self._shortest[0] == position:
            return
        shortest = self._shortest[1]
        try:
            self._with_retries(lambda: self._documents([shortest]), 1)
        except _Rejected as again:
            raise EmbeddingError(
                f"{self.info.key} refuses every input it is given (HTTP "
                f"{again.verdict.status}: {one_line(str(again.__cause__))}) while it accepts "
                f"a one-word probe: {self._refused + 1} inputs refused alone, the shortest "
                f"({len(shortest)} characters) included, and none accepted; check the "
                "server's input limit (a smaller --chunk-size) and its logs"
            ) from again.__cause__
        self._real_input_accepted()

    def _rows(self, raw: object, expected: int) -> list[np.ndarray | None]:
        """One float32 row per text; None for a row whose length is not the model's (the
        first call fixes it: the length most rows have). A whole batch of another length
        is a model changed under the same name, and fails the run."""
        try:
            rows = [np.asarray(r, dtype=np.float32).reshape(-1) for r in raw]  # type: ignore[attr-defined]
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(
                f"{self.info.key} returned something that is not a list of vectors ({exc}); "
                "the provider or server is not behaving as an embeddings API"
            ) from exc
        if len(rows) != expected:
            raise EmbeddingError(
                f"{self.info.key} returned {len(rows)} vectors for {expected} texts; the "
                "provider or server is not behaving as an embeddings API"
            )
        lengths = Counter(len(r) for r in rows)
        if self.dims is None:
            # The length most rows have (a tie: the longer, as a cut vector is shorter).
            self.dims = max(lengths, key=lambda n: (lengths[n], n))
            if not self.dims:
                raise EmbeddingError(f"{self.info.key} returned empty vectors")
        elif len(rows) > 1 and set(lengths) == {lengths.most_common(1)[0][0]} != {self.dims}:
            raise EmbeddingError(
                f"{self.info.key} changed vector size mid-run ({self.dims} → "
                f"{rows[0].shape[0]}); is the server serving another model?"
            )
        return [r if len(r) == self.dims else None for r in rows]

    @staticmethod
    def _width_of(raw: object) -> int:
        try:
            return int(np.asarray(raw, dtype=np.float32).reshape(-1).shape[0])
        except (TypeError, ValueError):
            return 0

    def _with_retries(self, call: Callable[[], object], size: int) -> object:
        timeouts = 0
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except KbgraphError:
                raise
            except Exception as exc:
                verdict = classify_error(exc)
                if verdict.kind == "rejected":
                    raise _Rejected(verdict) from exc
                if verdict.kind == "fatal":
                    raise self._fatal(verdict, exc) from exc
                timeouts += verdict.timed_out
                if timeouts > self.max_timeout_retries:
                    # Each timeout costs the whole request timeout: a server that never
                    # answers must fail in minutes, not after every retry's timeout.
                    raise EmbeddingError(
                        f"{self.info.key} did not answer within the request timeout "
                        f"{timeouts} times in a row ({_describe(verdict, exc)}); check that "
                        "the server is up, or allow slow answers a longer timeout "
                        "(--timeout SECONDS, KnowledgeBase(embedding_timeout=...)) — texts "
                        "already embedded are kept in the cache"
                    ) from exc
                if attempt == self.max_retries:
                    raise EmbeddingError(
                        f"{self.info.key} still failing after {self.max_retries + 1} attempts "
                        f"({_describe(verdict, exc)}); check that the provider is reachable "
                        "and try again later — texts already embedded are kept in the cache"
                    ) from exc
                delay = backoff_delay(
                    attempt,
                    verdict.retry_after,
                    jitter=self._rng.random(),
                    base=self.base_delay,
                    cap=self.max_delay,
                    max_retry_after=self.max_retry_after,
                )
                logger.info(
                    "embedding %d texts failed (%s); retry %d/%d in %.2fs",
                    size,
                    _describe(verdict, exc),
                    attempt + 1,
                    self.max_retries,
                    delay,
                )
                self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fatal(self, verdict: ErrorVerdict, exc: Exception) -> EmbeddingError:
        hint = _HINTS.get(verdict.status or 0, "check the embedding settings")
        return EmbeddingError(f"{self.info.key} failed: {_describe(verdict, exc)}; {hint}")


class _Rejected(Exception):
    """The provider refused the request's content (internal signal for bisection)."""

    def __init__(self, verdict: ErrorVerdict) -> None:
        super().__init__(verdict.status)
        self.verdict = verdict


def _describe(verdict: ErrorVerdict, exc: BaseException) -> str:
    status = f"HTTP {verdict.status}: " if verdict.status is not None else ""
    return f"{status}{type(exc).__name__}: {one_line(str(exc))}"


__all__ = [
    "BatchEmbedder",
    "EmbedOutcome",
    "EmbeddedBatch",
    "InputLimited",
    "check_dims",
    "l2_normalise",
    "length_order",
]
