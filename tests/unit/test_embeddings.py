"""Embedding specs, the fake embedder, batching, retries, bisection and truncation.

Providers here are small in-process ``Embeddings`` that raise the real exception classes of
openai and httpx; the real HTTP path is covered in tests/integration."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import httpx2
import numpy as np
import openai
import pytest
from langchain_core.embeddings import Embeddings
from langchain_openai import AzureOpenAIEmbeddings, OpenAIEmbeddings

from kbgraph.errors import ConfigError, DimensionMismatchError, EmbeddingError
from kbgraph.retrieval._embeddings import (
    ALLOWED_FORMS,
    PACKAGED_MODEL,
    BatchEmbedder,
    EmbeddingInfo,
    EmbeddingSpec,
    LocalEmbeddings,
    backoff_delay,
    check_dims,
    classify_error,
    describe_embeddings,
    l2_normalise,
    length_order,
    packaged_model_dir,
    parse_retry_after,
    parse_spec,
    resolve_embeddings,
)
from kbgraph.testing import FakeEmbeddings

URL = "http://127.0.0.1:9/v1/embeddings"

# -- specs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("local", EmbeddingSpec("local", PACKAGED_MODEL)),
        (" LOCAL ", EmbeddingSpec("local", PACKAGED_MODEL)),
        ("local:BAAI/bge-small-en-v1.5", EmbeddingSpec("local", "BAAI/bge-small-en-v1.5")),
        ("fake", EmbeddingSpec("fake", "bow-384", dims=384)),
        ("fake:8", EmbeddingSpec("fake", "bow-8", dims=8)),
        ("openai:text-embedding-3-small", EmbeddingSpec("openai", "text-embedding-3-small")),
        ("azure_openai:my-embed", EmbeddingSpec("azure_openai", "my-embed")),
        (
            "openai_compatible:nomic-embed-text:latest@http://localhost:11434/v1/",
            EmbeddingSpec(
                "openai_compatible", "nomic-embed-text:latest", "http://localhost:11434/v1"
            ),
        ),
        (
            "http://localhost:8000/v1#BAAI/bge-m3",
            EmbeddingSpec("openai_compatible", "BAAI/bge-m3", "http://localhost:8000/v1"),
        ),
        (
            "https://gpu.example:1234/v1|text-embedding-nomic",
            EmbeddingSpec(
                "openai_compatible", "text-embedding-nomic", "https://gpu.example:1234/v1"
            ),
        ),
    ],
)
def test_parse_spec_accepts_every_documented_form(spec: str, expected: EmbeddingSpec) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("cohere", "unknown provider 'cohere'"),
        ("openai", "needs a model"),
        ("openai:", "nothing follows"),
        ("azure_openai", "needs a deployment"),
        ("fake:abc", "integer"),
        ("fake:0", "integer"),
        ("openai_compatible:nomic", "openai_compatible:<model>@"),
        ("openai_compatible:nomic@ftp://host/v1", "openai_compatible:<model>@"),
        ("http://localhost:11434/v1", "needs the model"),
        ("http://localhost:11434/v1#", "needs the model"),
        ("http://:80/v1#m", "not an http(s) URL with a host"),
        ("http://host:port/v1#m", "invalid port"),
    ],
)
def test_parse_spec_rejects_with_allowed_forms(spec: str, why: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_spec(spec)
    message = str(caught.value)
    assert why in message
    for form in ALLOWED_FORMS:
        assert form in message


@pytest.mark.parametrize("command", ["index", "search", "ask"])
def test_the_cli_help_lists_every_spec_form(command: str) -> None:
    # `kbgraph index --help` had its own list, without local#int8 or http(s)://…#model.
    from click.testing import CliRunner

    from kbgraph.cli import main

    shown = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
    for form in ALLOWED_FORMS:
        assert form.split(" (")[0] in shown


def test_local_spec_with_a_folder_is_identified_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "my model"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    assert parse_spec("local:my model").model == str(folder.resolve())


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ("fake", {}),
        ("fake:16", {}),
        ("http://127.0.0.1:1/v1#nomic-embed-text", {}),
        ("openai_compatible:m@http://127.0.0.1:1/v1", {}),
        ("openai:text-embedding-3-small", {"OPENAI_API_KEY": "sk-test"}),
        (
            "azure_openai:embed-deploy",
            {
                "AZURE_OPENAI_ENDPOINT": "https://example-resource.openai.azure.com",
                "AZURE_OPENAI_API_KEY": "k",
                "OPENAI_API_VERSION": "2024-02-01",
            },
        ),
        ("local", {}),
    ],
)
def test_spec_and_resolved_object_describe_alike(
    spec: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    embeddings = resolve_embeddings(spec)
    assert describe_embeddings(embeddings) == describe_embeddings(spec)


def test_remote_clients_leave_retries_and_length_checks_to_us(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    compatible = resolve_embeddings("http://127.0.0.1:1/v1#m")
    assert isinstance(compatible, OpenAIEmbeddings)
    assert compatible.max_retries == 0
    assert compatible.check_embedding_ctx_length is False
    assert compatible.openai_api_base == "http://127.0.0.1:1/v1"
    assert compatible.openai_api_key is not None  # a dummy: local servers ignore it
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    keyed = resolve_embeddings("http://127.0.0.1:1/v1#m")
    assert isinstance(keyed, OpenAIEmbeddings)
    assert keyed.openai_api_key.get_secret_value() == "sk-from-env"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "missing"),
    [
        ("openai:text-embedding-3-small", "OPENAI_API_KEY"),
        ("azure_openai:d", "AZURE_OPENAI_ENDPOINT"),
    ],
)
def test_missing_credentials_are_a_config_error(
    spec: str, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=missing):
        resolve_embeddings(spec)


def test_azure_spec_builds_azure_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-02-01")
    azure = resolve_embeddings("azure_openai:team-embed")
    assert isinstance(azure, AzureOpenAIEmbeddings)
    assert (azure.deployment, azure.max_retries) == ("team-embed", 0)


def test_local_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules is how Python itself marks a module as unimportable.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ConfigError, match=r"install kbgraph\[local\]"):
        resolve_embeddings("local")


def test_local_resolves_lazily_to_the_packaged_model() -> None:
    local = resolve_embeddings("local")
    assert isinstance(local, LocalEmbeddings)
    assert local.model_name == PACKAGED_MODEL
    assert local._model is None  # nothing loaded until first use
    assert (packaged_model_dir() / "modules.json").is_file()


@pytest.mark.parametrize("spec", ["local#int8", "LOCAL # INT8", "local:my model#int8"])
def test_the_int8_local_model_is_another_model_with_its_own_identity(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my model").mkdir()
    monkeypatch.chdir(tmp_path)
    base = "local:my model" if "my model" in spec else "local"
    parsed = parse_spec(spec)
    assert parsed == EmbeddingSpec("local", f"{parse_spec(base).model}#int8")
    assert describe_embeddings(spec).key == f"{describe_embeddings(base).key}#int8"


def test_the_int8_packaged_model_resolves_lazily_and_names_itself() -> None:
    local = resolve_embeddings("local#int8")
    assert isinstance(local, LocalEmbeddings)
    assert (local.model_name, local.precision) == (f"{PACKAGED_MODEL}#int8", "int8")
    assert local._model is None and local._onnx is None  # nothing loaded until first use
    assert describe_embeddings(local) == describe_embeddings("local#int8")


def test_an_int8_model_has_no_torch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGRAPH_LOCAL_BACKEND", "torch")
    with pytest.raises(ConfigError, match="onnxruntime only and KBGRAPH_LOCAL_BACKEND is torch"):
        resolve_embeddings("local#int8").embed_query("retries")


def test_an_int8_model_that_cannot_be_made_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from kbgraph.retrieval._embeddings import _local

    monkeypatch.delenv("KBGRAPH_LOCAL_BACKEND", raising=False)
    monkeypatch.setattr(_local.OnnxEncoder, "load", classmethod(lambda cls, *a, **k: None))
    monkeypatch.setattr(_local, "quantize", lambda model, pipeline: "cosine 0.412 only")
    monkeypatch.setattr(_local.LocalEmbeddings, "client", property(lambda self: object()))
    with pytest.raises(ConfigError, match=r"int8 export of .*#int8: cosine 0.412 only; install"):
        resolve_embeddings("local#int8").embed_query("retries")


def test_a_precision_other_than_fp32_or_int8_is_refused() -> None:
    with pytest.raises(ConfigError, match="use 'fp32' or 'int8'"):
        LocalEmbeddings(precision="int4")
    with pytest.raises(ConfigError, match="unknown provider"):
        parse_spec("fake#int8")


def test_resolve_passes_objects_through_and_rejects_other_types() -> None:
    fake = FakeEmbeddings(8)
    assert resolve_embeddings(fake) is fake
    with pytest.raises(ConfigError, match="LangChain Embeddings"):
        resolve_embeddings(42)  # type: ignore[arg-type]


class _NamedEmbeddings(Embeddings):
    def __init__(self, model_name: str | None) -> None:
        if model_name is not None:
            self.model_name = model_name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


@pytest.mark.parametrize(
    ("embeddings", "expected"),
    [
        (_NamedEmbeddings("bge-m3"), EmbeddingInfo("_NamedEmbeddings", "bge-m3")),
        (_NamedEmbeddings(None), EmbeddingInfo("_NamedEmbeddings", "default")),
        (
            OpenAIEmbeddings(model="text-embedding-3-large", api_key="k", dimensions=256),  # type: ignore[arg-type]
            EmbeddingInfo("openai", "text-embedding-3-large", 256),
        ),
    ],
)
def test_describe_arbitrary_embeddings(embeddings: Embeddings, expected: EmbeddingInfo) -> None:
    assert describe_embeddings(embeddings) == expected


def test_shortened_vectors_get_their_own_cache_key() -> None:
    full = EmbeddingInfo("openai", "text-embedding-3-large")
    short = EmbeddingInfo("openai", "text-embedding-3-large", 256)
    assert full.key == "openai:text-embedding-3-large"
    assert short.key != full.key
    assert short.to_dict() == {
        "provider": "openai",
        "model": "text-embedding-3-large",
        "dimensions": 256,
    }


# -- the fake embedder -------------------------------------------------------------------


def _cos(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_fake_is_deterministic_and_unit_length() -> None:
    texts = ["Retry policy: exponential backoff", "naïve café — 東京", "", "line\r\nbreak"]
    first = FakeEmbeddings().embed_documents(texts)
    second = FakeEmbeddings().embed_documents(texts)
    assert first == second
    assert all(len(v) == 384 for v in first)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert FakeEmbeddings().embed_query(texts[1]) == first[1]


@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        ("configure the retry policy", "the retry policy is configured here", "bake bread daily"),
        ("Straße nach München", "STRASSE NACH MÜNCHEN", "Kuchen backen"),
        ("alpha\r\nbeta gamma", "alpha\nbeta\ngamma", "delta epsilon"),
    ],
)
def test_fake_texts_sharing_words_are_similar(query: str, near: str, far: str) -> None:
    fake = FakeEmbeddings()
    q, n, f = fake.embed_query(query), fake.embed_query(near), fake.embed_query(far)
    assert _cos(q, n) > 0.3
    assert _cos(q, n) > _cos(q, f) + 0.2


@pytest.mark.parametrize("dims", [1, 7, 1536])
def test_fake_dims(dims: int) -> None:
    assert len(resolve_embeddings(f"fake:{dims}").embed_query("x y")) == dims


# -- batching --------------------------------------------------------------------------


class _Recording(Embeddings):
    """FakeEmbeddings that records each call and raises scripted errors first."""

    def __init__(self, errors: list[BaseException] | None = None, dims: int = 16) -> None:
        self.fake = FakeEmbeddings(dims)
        self.errors = list(errors or [])
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.errors:
            raise self.errors.pop(0)
        return self.fake.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _texts(n: int) -> list[str]:
    return [f"chunk {i} über naïve text\r\nline {i % 7}" for i in range(n)]


def test_batches_keep_order_and_report_progress() -> None:
    provider = _Recording()
    done: list[int] = []
    texts = _texts(150)
    outcome = BatchEmbedder(provider, batch_size=64).embed(texts, on_batch=done.append)
    assert [len(c) for c in provider.calls] == [64, 64, 22]
    assert sorted(t for call in provider.calls for t in call) == sorted(texts)
    assert done == [64, 128, 150]
    assert outcome.vectors.dtype == np.float32
    assert outcome.vectors.shape == (150, 16)
    expected = l2_normalise(np.array(FakeEmbeddings(16).embed_documents(texts)))
    assert np.allclose(outcome.vectors, expected, atol=1e-6)
    assert (outcome.failed, outcome.truncated) == ([], 0)


def test_batches_hold_texts_of_similar_length_and_results_come_back_in_order() -> None:
    """Longest first across the whole run: a batch pads to its longest text, so mixing a
    long text into every batch (caller order) would pay for it batch after batch."""
    lengths = [5, 400, 12, 390, 7, 380, 9, 10]
    texts = [f"t{i} " + "w" * (n - 3) for i, n in enumerate(lengths)]
    provider = _Recording()
    outcome = BatchEmbedder(provider, batch_size=3).embed(texts)
    batch_lengths = [[len(t) for t in call] for call in provider.calls]
    assert batch_lengths == [[400, 390, 380], [12, 10, 9], [7, 5]]
    expected = l2_normalise(np.array(provider.fake.embed_documents(texts)))
    assert np.allclose(outcome.vectors, expected, atol=1e-6)  # the caller's order
    assert length_order(["bb", "a", "cc", "ddd"]) == [3, 0, 2, 1]  # ties keep their order


def test_iter_batches_names_the_positions_of_each_row() -> None:
    texts = ["a", "ccc", "bb", "POISON dddd"]
    batches = list(BatchEmbedder(_Poisoned(), batch_size=2).iter_batches(texts))
    assert [b.indices for b in batches] == [[3, 1], [2, 0]]
    assert [b.failed for b in batches] == [[3], []]
    fake = FakeEmbeddings(16)
    assert np.allclose(batches[0].vectors[1], l2_normalise(np.array([fake.embed_query("ccc")]))[0])


def test_empty_input_embeds_nothing() -> None:
    provider = _Recording()
    outcome = BatchEmbedder(provider).embed([])
    assert provider.calls == []
    assert outcome.vectors.shape[0] == 0


def test_vectors_are_l2_normalised_even_when_the_provider_does_not() -> None:
    class Unnormalised(_Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[3.0, 4.0] for _ in texts]

    outcome = BatchEmbedder(Unnormalised()).embed(["a", "b"])
    assert np.allclose(outcome.vectors, [[0.6, 0.8], [0.6, 0.8]])


def test_unusable_rows_are_failed_not_kept() -> None:
    class Broken(_Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            rows = {"nan": [float("nan"), 1.0], "zero": [0.0, 0.0]}
            return [rows.get(t, [1.0, 1.0]) for t in texts]

    outcome = BatchEmbedder(Broken()).embed(["ok", "nan", "zero", "ok"])
    assert outcome.failed == [1, 2]
    assert np.all(outcome.vectors[[1, 2]] == 0)
    assert np.allclose(np.linalg.norm(outcome.vectors[[0, 3]], axis=1), 1.0)


def test_one_vector_of_the_wrong_length_is_left_out_like_a_nan_one() -> None:
    """Issue 12: a single wrong-length vector aborted every run on that folder."""

    class Ragged(_Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            vectors = self.fake.embed_documents(texts)
            return [v[:-1] if "odd" in t else v for t, v in zip(texts, vectors, strict=True)]

    texts = ["ok", "odd one", "ok 2", "fine", "alpha", "odd"]
    outcome = BatchEmbedder(Ragged(), batch_size=4).embed(texts)
    assert outcome.failed == [1, 5]
    assert outcome.vectors.shape == (6, 16)
    assert np.all(outcome.vectors[[1, 5]] == 0)


def test_a_whole_batch_of_another_length_is_a_changed_model() -> None:
    class Shrinking(_Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            cut = 16 if len(self.calls) == 0 else 8
            self.calls.append(list(texts))
            return [v[:cut] for v in self.fake.embed_documents(texts)]

    with pytest.raises(EmbeddingError, match="changed vector size mid-run"):
        BatchEmbedder(Shrinking(), batch_size=2).embed(["a", "b", "c", "d"])


def test_timeouts_are_retried_twice_then_fail_naming_the_timeout_option() -> None:
    delays: list[float] = []
    timeout = openai.APITimeoutError(request=httpx2.Request("POST", URL))
    provider = _Recording([timeout for _ in range(10)])
    embedder = BatchEmbedder(provider, sleep=delays.append)
    with pytest.raises(EmbeddingError, match="did not answer within the request timeout 3 times"):
        embedder.embed(["a"])
    assert len(provider.calls) == 3 and len(delays) == 2


def test_a_provider_returning_too_few_vectors_is_an_error() -> None:
    class Short(_Recording):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0]]

    with pytest.raises(EmbeddingError, match="1 vectors for 3 texts"):
        BatchEmbedder(Short()).embed(["a", "b", "c"])


# -- error classification -----------------------------------------------------------------


def _openai_status(cls: type[openai.APIStatusError], status: int, **headers: str) -> Exception:
    request = httpx2.Request("POST", URL)
    response = httpx2.Response(status, request=request, headers=headers)
    return cls("boom", response=response, body=None)


def _httpx_status(status: int, **headers: str) -> Exception:
    request = httpx.Request("POST", URL)
    response = httpx.Response(status, request=request, headers=headers)
    return httpx.HTTPStatusError("boom", request=request, response=response)


@pytest.mark.parametrize(
    ("exc", "kind", "status"),
    [
        (_openai_status(openai.RateLimitError, 429), "transient", 429),
        (_openai_status(openai.InternalServerError, 503), "transient", 503),
        (_openai_status(openai.APIStatusError, 408), "transient", 408),
        (_openai_status(openai.ConflictError, 409), "transient", 409),
        (_openai_status(openai.BadRequestError, 400), "rejected", 400),
        (_openai_status(openai.APIStatusError, 413), "rejected", 413),
        (_openai_status(openai.UnprocessableEntityError, 422), "rejected", 422),
        (_openai_status(openai.AuthenticationError, 401), "fatal", 401),
        (_openai_status(openai.NotFoundError, 404), "fatal", 404),
        (openai.APITimeoutError(request=httpx2.Request("POST", URL)), "transient", None),
        (openai.APIConnectionError(request=httpx2.Request("POST", URL)), "transient", None),
        (_httpx_status(502), "transient", 502),
        (_httpx_status(400), "rejected", 400),
        (_httpx_status(403), "fatal", 403),
        (httpx.ReadTimeout("slow"), "transient", None),
        (httpx.ConnectError("refused"), "transient", None),
        (httpx2.ConnectTimeout("slow"), "transient", None),
        (TimeoutError(), "transient", None),
        (ConnectionResetError(), "transient", None),
        (ValueError("bug"), "fatal", None),
        (KeyError("bug"), "fatal", None),
    ],
)
def test_classify_error(exc: Exception, kind: str, status: int | None) -> None:
    verdict = classify_error(exc)
    assert (verdict.kind, verdict.status) == (kind, status)


def test_classify_reads_retry_after_of_transient_errors_only() -> None:
    limited = _openai_status(openai.RateLimitError, 429, **{"retry-after": "7"})
    refused = _openai_status(openai.BadRequestError, 400, **{"retry-after": "7"})
    assert classify_error(limited).retry_after == 7.0
    assert classify_error(_httpx_status(503, **{"Retry-After": "2"})).retry_after == 2.0
    assert classify_error(refused).retry_after is None


NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "5"}, 5.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"RETRY-AFTER": "-3"}, 0.0),
        ({"Retry-After": format_datetime(NOW + timedelta(seconds=42), usegmt=True)}, 42.0),
        ({"Retry-After": format_datetime(NOW - timedelta(seconds=42), usegmt=True)}, 0.0),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": ""}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_parse_retry_after_accepts_real_header_objects() -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": "3"})) == 3.0
    assert parse_retry_after(httpx2.Headers({"retry-after-ms": "20"})) == 0.02


@pytest.mark.parametrize("attempt", [0, 1, 2, 3, 8])
@pytest.mark.parametrize("jitter", [0.0, 0.5, 0.999])
def test_backoff_grows_exponentially_within_equal_jitter_bounds(
    attempt: int, jitter: float
) -> None:
    ceiling = min(30.0, 2.0**attempt)
    delay = backoff_delay(attempt, None, jitter=jitter, base=1.0, cap=30.0)
    assert ceiling / 2 <= delay <= ceiling


def test_backoff_obeys_retry_after_up_to_a_cap() -> None:
    assert backoff_delay(0, 12.0, jitter=0.9) == 12.0
    assert backoff_delay(5, 0.0, jitter=0.9) == 0.0
    assert backoff_delay(0, 10_000.0, jitter=0.0, max_retry_after=120.0) == 120.0


# -- retries -----------------------------------------------------------------------------


def test_retry_after_is_honoured_through_the_injected_sleep() -> None:
    delays: list[float] = []
    provider = _Recording(
        [
            _openai_status(openai.RateLimitError, 429, **{"retry-after": "3"}),
            _httpx_status(503),
            openai.APITimeoutError(request=httpx2.Request("POST", URL)),
        ]
    )
    embedder = BatchEmbedder(provider, sleep=delays.append, base_delay=0.5, max_delay=8.0)
    outcome = embedder.embed(["a", "b"])
    assert len(provider.calls) == 4
    assert delays[0] == 3.0
    assert 0.5 <= delays[1] <= 1.0  # attempt 1: equal jitter over [0.5, 1.0]
    assert 1.0 <= delays[2] <= 2.0
    assert outcome.failed == []


def test_exhausted_retries_raise_a_clear_error() -> None:
    delays: list[float] = []
    provider = _Recording([_httpx_status(503) for _ in range(10)])
    embedder = BatchEmbedder(provider, max_retries=3, sleep=delays.append)
    with pytest.raises(
        EmbeddingError, match=r"_Recording:default still failing after 4 attempts"
    ) as excinfo:
        embedder.embed(["a"])
    assert "HTTP 503" in str(excinfo.value)
    assert len(provider.calls) == 4
    assert len(delays) == 3


@pytest.mark.parametrize(("status", "hint"), [(401, "API key"), (404, "model or deployment")])
def test_fatal_errors_stop_at_once(status: int, hint: str) -> None:
    delays: list[float] = []
    provider = _Recording([_openai_status(openai.APIStatusError, status)])
    with pytest.raises(EmbeddingError, match=hint):
        BatchEmbedder(provider, sleep=delays.append).embed(["a", "b"])
    assert (len(provider.calls), delays) == (1, [])


def test_unexpected_exceptions_become_embedding_errors_with_the_cause() -> None:
    provider = _Recording([RuntimeError("CUDA out of memory")])
    with pytest.raises(EmbeddingError, match="CUDA out of memory") as caught:
        BatchEmbedder(provider).embed(["a"])
    assert isinstance(caught.value.__cause__, RuntimeError)


# -- bisection ---------------------------------------------------------------------------


class _Poisoned(_Recording):
    """Refuses (400) any request holding a text with ``POISON``, as OpenAI refuses a batch."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if any("POISON" in t for t in texts):
            raise _openai_status(openai.BadRequestError, 400)
        return self.fake.embed_documents(texts)


@pytest.mark.parametrize("bad", [[0], [37], [63], [5, 6], [1, 40, 63], [64, 149]])
def test_bisection_isolates_refused_inputs(bad: list[int]) -> None:
    texts = _texts(150)
    for i in bad:
        texts[i] = f"POISON {i} ☠"
    provider = _Poisoned()
    outcome = BatchEmbedder(provider, batch_size=64).embed(texts)
    assert outcome.failed == bad
    good = [i for i in range(150) if i not in bad]
    expected = l2_normalise(np.array(provider.fake.embed_documents([texts[i] for i in good])))
    assert np.allclose(outcome.vectors[good], expected, atol=1e-6)
    assert np.all(outcome.vectors[bad] == 0)
    # Bisection costs O(k·log n) extra calls, not one call per text.
    assert len(provider.calls) <= 3 + len(bad) * 2 * 7


def test_a_single_refused_input_is_reported_not_raised() -> None:
    assert BatchEmbedder(_Poisoned()).embed(["POISON"]).failed == [0]


def test_every_input_refused_is_an_error() -> None:
    # The probe is accepted: the shortest input alone is refused too, so the run stops.
    with pytest.raises(EmbeddingError, match="refuses every input it is given"):
        BatchEmbedder(_Poisoned(), batch_size=2).embed(["POISON a", "POISON b", "POISON c"])


def test_a_later_batch_fixes_the_width_of_an_all_refused_first_batch() -> None:
    outcome = BatchEmbedder(_Poisoned(), batch_size=2).embed(["POISON a", "POISON b", "ok"])
    assert outcome.failed == [0, 1]
    assert outcome.vectors.shape == (3, 16)


# -- truncation, queries, dims -----------------------------------------------------------


def test_over_long_inputs_are_truncated_counted_and_logged(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = _Recording()
    texts = ["é" * 25, "short", "x\r\n" * 10]
    with caplog.at_level(logging.WARNING, logger="kbgraph.retrieval._embeddings"):
        outcome = BatchEmbedder(provider, max_chars=20).embed(texts)
    assert outcome.truncated == 2
    assert provider.calls == [["é" * 20, ("x\r\n" * 10)[:20], "short"]]  # longest first
    assert "2 of 3 texts are longer than" in caplog.text
    assert "input limit of 20 characters" in caplog.text
    assert capsys.readouterr() == ("", "")


class _TokenLimited(_Recording):
    """Knows its input limit in "tokens" (words here), as the local model knows its
    tokenizer's: the warning must count what the model cuts, not characters."""

    def over_input_limit(self, texts: Sequence[str]) -> list[bool]:
        return [len(t.split()) > 4 for t in texts]

    def input_limit(self) -> str:
        return "4 tokens"


def test_truncation_warning_uses_the_models_own_limit_once_per_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    texts = ["one two three", "a b c d e f", "short", "w " * 10, "x" * 30]
    with caplog.at_level(logging.WARNING, logger="kbgraph.retrieval._embeddings"):
        outcome = BatchEmbedder(_TokenLimited(), batch_size=2, max_chars=25).embed(texts)
    # "a b c d e f" and "w w ..." exceed 4 tokens; "x" * 30 exceeds 25 characters.
    assert outcome.truncated == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text  # three batches, one warning with a count
    assert "3 of 5 texts" in warnings[0].getMessage()
    assert "4 tokens" in warnings[0].getMessage()


def test_no_truncation_warning_when_every_text_fits(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kbgraph.retrieval._embeddings"):
        outcome = BatchEmbedder(_TokenLimited()).embed(["one two", "three four five"])
    assert outcome.truncated == 0
    assert caplog.text == ""


def test_embed_query_is_normalised_and_retried() -> None:
    delays: list[float] = []
    provider = _Recording([_httpx_status(500)])
    vector = BatchEmbedder(provider, sleep=delays.append).embed_query("retry policy")
    assert vector.shape == (16,)
    assert np.isclose(np.linalg.norm(vector), 1.0)
    assert len(delays) == 1


def test_a_refused_query_is_an_embedding_error() -> None:
    with pytest.raises(EmbeddingError, match="refused the query"):
        BatchEmbedder(_Poisoned()).embed_query("POISON")


def test_dimensions_probe_once() -> None:
    provider = _Recording(dims=24)
    embedder = BatchEmbedder(provider)
    assert embedder.dimensions() == 24
    assert embedder.dimensions() == 24
    assert len(provider.calls) == 1


def test_check_dims_passes_on_equal_sizes() -> None:
    check_dims(384, 384)


def test_check_dims_says_what_to_do() -> None:
    with pytest.raises(DimensionMismatchError) as caught:
        check_dims(
            384,
            1536,
            index_model="local:sentence-transformers/all-MiniLM-L6-v2",
            current_model="openai:text-embedding-3-small",
        )
    message = str(caught.value)
    for part in (
        "384",
        "1536",
        "local:sentence-transformers/all-MiniLM-L6-v2",
        "openai:text-embedding-3-small",
        "kbgraph index --rebuild",
        "original model",
    ):
        assert part in message


def test_l2_normalise_leaves_zero_rows_alone() -> None:
    out = l2_normalise(np.array([[0.0, 0.0], [0.0, 2.0]]))
    assert out.tolist() == [[0.0, 0.0], [0.0, 1.0]]


def test_torch_threads_are_set_inside_the_block_and_restored() -> None:
    torch = pytest.importorskip("torch")
    from kbgraph.retrieval._embeddings._local import _torch_threads

    before = torch.get_num_threads()
    with _torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with _torch_threads(None):
        assert torch.get_num_threads() == before
