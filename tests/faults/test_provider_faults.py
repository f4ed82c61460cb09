"""A misbehaving embedding provider, served over real HTTP on loopback (tests/support's
OpenAI-compatible server) to ``kbgraph index``: transient faults are retried, bad inputs and
bad vectors are left out (and embedded on the next run), a provider that fails for good
stops the run with exit 1 and one line, a hung one within a few ``--timeout``s; what a
failed run embedded is kept, so the next run embeds only the rest."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from kbgraph.errors import EmbeddingError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import l2_normalise
from kbgraph.retrieval._records import Chunk, index_text
from kbgraph.testing import FakeEmbeddings
from tests.faults.conftest import cli, generation, one_line_reason, snapshot, write_docs
from tests.support.openai_server import EMBEDDINGS_PATH, OpenAIServer

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]
FAKE = FakeEmbeddings()


class Provider:
    """The model behind the server; ``broken`` inputs get a bad vector until ``fix()``."""

    def __init__(self) -> None:
        self.broken: dict[str, str] = {}  # marker in the text -> "nan" | "short"

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors = FAKE.embed_documents(texts)
        for i, text in enumerate(texts):
            for marker, kind in self.broken.items():
                if marker in text:
                    vectors[i] = [math.nan] * len(vectors[i]) if kind == "nan" else vectors[i][:-1]
        return vectors

    def fix(self) -> None:
        self.broken.clear()


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
def server(provider: Provider) -> Iterator[OpenAIServer]:
    with OpenAIServer(embeddings=provider) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """150 files of one chunk each: three batches of 64."""
    docs = {
        f"notes/n{i:03d}.md": f"# Note {i}\n\nretry backoff token {i} ünïcode\n" for i in range(150)
    }
    docs["poison.md"] = "# Poison\n\nPOISON input the provider refuses\n"
    docs["nan.md"] = "# NaN\n\nNANVEC input the provider embeds as NaN\n"
    docs["short.md"] = "# Short\n\nSHORTVEC input the provider embeds one number short\n"
    return write_docs(tmp_path / "docs", docs)  # type: ignore[arg-type]


def index(folder: Path, server: OpenAIServer, *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    spec = f"openai_compatible:fake-embedding@{server.base_url}"
    run = cli("index", str(folder), "--embedding", spec, "--json", *extra)
    return run.code, (run.json() if run.code == 0 else {}), run.stderr


def test_transient_faults_are_retried(folder: Path, server: OpenAIServer) -> None:
    server.rate_limit_next(2, retry_after=0)
    server.fail_next(1, status=502, headers={"Retry-After": "0"}, after=1)
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["embedded"] == report["chunkCount"] == 153


def test_refused_inputs_and_bad_vectors_are_left_out_and_embedded_next_run(
    folder: Path, server: OpenAIServer, provider: Provider
) -> None:
    """One input refused (HTTP 400), one NaN vector, one vector of the wrong length: each
    is left out alone, the run succeeds, and the next run embeds exactly those three."""
    before = snapshot(folder)
    server.reject_inputs_containing("POISON")
    provider.broken.update({"NANVEC": "nan", "SHORTVEC": "short"})
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["failedEmbeddings"] == 3 and report["embedded"] == 150, report
    server.clear_faults()
    provider.fix()
    code, again, stderr = index(folder, server)
    assert code == 0, stderr
    assert (again["embedded"], again["failedEmbeddings"]) == (3, 0), again
    assert snapshot(folder) == before


def test_a_provider_that_keeps_failing_stops_the_run_and_keeps_what_it_embedded(
    folder: Path, server: OpenAIServer
) -> None:
    server.fail_next(6, status=503, headers={"Retry-After": "0"}, after=1)
    code, _, stderr = index(folder, server)
    assert code == 1
    assert "still failing after 6 attempts" in one_line_reason_of(stderr)
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["embedded"] == 153 - 64, report  # the first batch was kept


def test_a_provider_that_hangs_fails_within_a_few_timeouts(
    folder: Path, server: OpenAIServer
) -> None:
    server.hang_next(10, seconds=30)
    started = time.monotonic()
    code, _, stderr = index(folder, server, "--timeout", "0.5")
    elapsed = time.monotonic() - started
    assert code == 1
    reason = one_line_reason_of(stderr)
    assert "did not answer within the request timeout 3 times" in reason
    assert "--timeout" in reason
    assert elapsed < 20, elapsed
    server.clear_faults()
    code, report, stderr = index(folder, server, "--timeout", "5")
    assert code == 0 and report["embedded"] == 153, stderr


def test_one_slow_answer_is_retried_within_the_timeout(folder: Path, server: OpenAIServer) -> None:
    server.hang_next(1, seconds=30, after=1)
    code, report, stderr = index(folder, server, "--timeout", "0.5")
    assert code == 0, stderr
    assert report["embedded"] == 153


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ({"status": 401}, "check the API key"),
        ({"status": 404}, "check the model or deployment name"),
    ],
)
def test_configuration_faults_fail_at_once_with_one_line(
    folder: Path, server: OpenAIServer, fault: dict[str, int], said: str
) -> None:
    server.fail_next(1, **fault)
    started = time.monotonic()
    code, _, stderr = index(folder, server)
    assert code == 1 and said in one_line_reason_of(stderr)
    assert time.monotonic() - started < 10


def test_a_server_that_returns_too_few_vectors_fails_with_one_line(
    folder: Path, provider: Provider
) -> None:
    with OpenAIServer(embeddings=lambda texts: provider(texts)[:-1]) as short:
        code, _, stderr = index(folder, short)
    assert code == 1 and "vectors for" in one_line_reason_of(stderr)


def test_timeout_is_validated(folder: Path, server: OpenAIServer) -> None:
    code, _, stderr = index(folder, server, "--timeout", "0")
    assert code == 2 and "--timeout" in stderr


def one_line_reason_of(stderr: str) -> str:
    from tests.faults.conftest import Run

    return one_line_reason(Run(1, "", stderr))


def test_vectors_are_matched_to_their_texts_by_index(folder: Path, server: OpenAIServer) -> None:
    """Regression (issue 24, hole 4): a server that answers the `data` items in reverse
    order, each with its correct `index`, got every vector attached to another text
    (128/128) and the index validated."""
    server.shape_items(lambda items: items[::-1])
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["embedded"] == 153
    gen = generation(folder)
    rows = [Chunk.from_dict(json.loads(line)) for line in (gen / "chunks.jsonl").read_bytes()
            .splitlines()]  # fmt: skip
    expected = l2_normalise(np.asarray(FAKE.embed_documents([index_text(c) for c in rows])))
    raw = (gen / "vectors.bin").read_bytes()
    vectors = np.frombuffer(raw[16:], dtype="<f4").reshape(len(rows), -1)
    matched = int(np.sum(np.isclose(np.sum(vectors * expected, axis=1), 1.0, atol=1e-4)))
    assert matched == len(rows), f"{len(rows) - matched} vectors belong to other texts"


def test_items_without_an_index_and_one_missing_are_refused(
    folder: Path, server: OpenAIServer
) -> None:
    def drop(items: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in item.items() if k != "index"} for item in items[:-1]]

    server.shape_items(drop)
    code, _, stderr = index(folder, server)
    assert code == 1
    assert "without an index" in one_line_reason_of(stderr)


def test_a_provider_that_refuses_every_request_fails_at_once(
    folder: Path, server: OpenAIServer
) -> None:
    """Regression (issue 24, hole 9): a provider answering 400 to everything was bisected
    down to every input (15,990 requests, 709 s, 8,058 warning lines on a real folder)
    before the one-line failure."""
    server.reject_inputs_containing("")  # every text contains the empty string
    started = time.monotonic()
    code, _, stderr = index(folder, server)
    assert code == 1
    reason = one_line_reason_of(stderr)
    assert "refuses the requests themselves" in reason and "HTTP 400" in reason, reason
    assert len(server.requests_to(EMBEDDINGS_PATH)) <= 3
    assert time.monotonic() - started < 20


def test_a_provider_message_over_several_lines_is_one_line(
    folder: Path, server: OpenAIServer
) -> None:
    """Regression (issue 24, hole 9): a provider's message with newlines broke the
    one-line rule."""
    message = "invalid key\nTraceback (most recent call last):\n  File 'app.py', line 3"
    server.fail_next(1, status=401, message=message)
    code, _, stderr = index(folder, server)
    assert code == 1
    assert "invalid key Traceback" in one_line_reason_of(stderr)


class HangingEmbeddings(Embeddings):
    """An Embeddings object whose calls do not return until ``released`` is set."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.released.wait(50)
        return FAKE.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_an_embeddings_object_that_hangs_is_timed_out(tmp_path: Path) -> None:
    """Regression (issue 24, hole 9): the timeout covered remote specs only; an Embeddings
    object that never answered hung the run."""
    folder = write_docs(tmp_path / "docs")
    hanging = HangingEmbeddings()
    started = time.monotonic()
    try:
        with (
            KnowledgeBase(folder, embedding=hanging, embedding_timeout=0.5) as kb,
            pytest.raises(EmbeddingError, match="did not answer within the request timeout"),
        ):
            kb.index()
    finally:
        hanging.released.set()
    assert time.monotonic() - started < 20


def test_a_provider_that_accepts_the_probe_but_refuses_every_input_stops_at_once(
    folder: Path, server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression (issue 35, hole 10): a provider that embeds the one-word probe but answers
    400 to every real input got 8,343 requests and 4,172 warning lines (each input bisected
    down to itself); it stops after a few requests with one line."""
    server.reject_inputs_containing(" ")  # every chunk has a space, the probe "probe" none
    started = time.monotonic()
    code, _, stderr = index(folder, server)
    assert code == 1
    reason = one_line_reason_of(stderr)
    assert "refuses every input" in reason and "HTTP 400" in reason, reason
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [], [r.getMessage() for r in warnings][:3]  # the one line only
    assert len(server.requests_to(EMBEDDINGS_PATH)) <= 12
    assert time.monotonic() - started < 20


def test_one_refused_input_first_in_line_does_not_stop_the_run(
    folder: Path, server: OpenAIServer
) -> None:
    """The stop above must not fire on one bad input that happens to come first (the
    longest text is embedded first): the shortest input is accepted, so the run goes on."""
    path = folder / "poison.md"
    path.write_text("# Poison\n\nPOISON " + "long words to be embedded first " * 20 + "\n")
    server.reject_inputs_containing("POISON")
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["failedEmbeddings"] == 1, report
    assert report["embedded"] == report["chunkCount"] - 1, report


def test_items_without_an_index_in_another_order_are_refused(
    folder: Path, server: OpenAIServer
) -> None:
    """Regression (issue 35, hole 10): items answered in reverse order *without* their
    `index` were attached to the wrong texts (126/127); the order is checked once against
    inputs embedded alone, and a server that reorders is refused with one line."""

    def reverse_without_index(items: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in item.items() if k != "index"} for item in items[::-1]]

    server.shape_items(reverse_without_index)
    code, _, stderr = index(folder, server)
    assert code == 1
    reason = one_line_reason_of(stderr)
    assert "without an index" in reason and "order" in reason, reason
    assert not (folder / ".kbgraph" / "CURRENT").exists()


def test_items_without_an_index_in_input_order_are_taken(
    folder: Path, server: OpenAIServer
) -> None:
    """A server that answers in input order without `index` (allowed: the count matches)
    passes the order check and costs two requests more."""

    def no_index(items: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in item.items() if k != "index"} for item in items]

    server.shape_items(no_index)
    code, report, stderr = index(folder, server)
    assert code == 0, stderr
    assert report["embedded"] == 153
    assert len(server.requests_to(EMBEDDINGS_PATH)) == 3 + 2
