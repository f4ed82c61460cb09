"""The local model without torch at query time: an ONNX export of a sentence-transformers
model, run by onnxruntime, tokenized by the model's own ``tokenizer.json``.

A cold ``kbgraph search`` with the local model used to spend seconds importing torch and
transformers and loading the weights before it embedded one query. The same network,
exported once to ONNX, loads in a fraction of that and gives the same vectors (the export
is checked against the torch model before it is kept: cosine ≥ ``MIN_COSINE`` on probe
texts), so the model's identity and every existing index stay valid.

Only the pipeline all-MiniLM-L6-v2 and most sentence-transformers models use is
reproduced: ``Transformer`` → mean ``Pooling`` → optional ``Normalize``, no prompts. Any
other model keeps the sentence-transformers path. The export is written once, by the first
process that loads the model with sentence-transformers (``kbgraph index`` usually), into
``$KBGRAPH_CACHE_DIR`` (default ``$XDG_CACHE_HOME/kbgraph``, else ``~/.cache/kbgraph``)
under ``onnx/exports/``, atomically, named by the model's content: every virtualenv with
the same model shares it, and exports nothing needs any more are pruned
(:mod:`._onnx_cache`). ``KBGRAPH_LOCAL_BACKEND`` = ``torch`` forces the sentence-transformers
path, ``onnx`` refuses to fall back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kbgraph.errors import ConfigError

from ._onnx_cache import (
    CACHE_ENV,
    MANIFEST,
    OPSET,
    cache_root,
    export_folder,
    exports_root,
    reading,
    writing,
)
from ._tokens import Tokens, cut_to, padded, token_batches

BACKEND_ENV = "KBGRAPH_LOCAL_BACKEND"
Backend = Literal["auto", "onnx", "torch"]
MODEL_FILE = "model.onnx"
MIN_COSINE = 0.9999
_PROBES = (
    "How do retries back off?",
    "Café crème, naïve façade — 東京の天気は晴れです。 😀",
    "def backoff(attempt):\n    return min(30, 2 ** attempt)\n" * 8,
    "x",
)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_ST = "sentence_transformers.models."


def backend_choice() -> Backend:
    value = os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "onnx", "torch"):
        raise ConfigError(f"{BACKEND_ENV}={value!r} is not allowed; use auto, onnx or torch")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Pipeline:
    """What the ONNX path must reproduce of a sentence-transformers model folder."""

    folder: Path
    max_seq_length: int
    normalize: bool
    precision: str = "fp32"  # or "int8": the fp32 export with int8 weights (_onnx_int8.py)

    def key_inputs(self) -> dict[str, Any]:
        """What besides the model's files decides the export (part of its key; an fp32
        export's key is the one it had before int8 existed)."""
        inputs: dict[str, Any] = {"max_seq_length": self.max_seq_length}
        inputs["normalize"] = self.normalize
        if self.precision != "fp32":
            inputs["precision"] = self.precision
        return inputs

    def at(self, precision: str) -> Pipeline:
        return dataclasses.replace(self, precision=precision)


def export_dir(pipeline: Pipeline) -> Path:
    """The folder of the pipeline's export, named by content (it may not exist yet)."""
    return export_folder(pipeline.folder, pipeline.key_inputs())


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def pipeline_of(folder: str | Path) -> Pipeline | None:
    """The pipeline of a sentence-transformers model folder when the ONNX path can
    reproduce it (Transformer → mean Pooling → optional Normalize, no prompts, a
    ``tokenizer.json``); None otherwise."""
    root = Path(folder)
    try:
        modules = _read_json(root / "modules.json")
        types = [m["type"] for m in modules]
        if types[:2] != [_ST + "Transformer", _ST + "Pooling"] or types[2:] not in (
            [],
            [_ST + "Normalize"],
        ):
            return None
        pooling = _read_json(root / modules[1]["path"] / "config.json")
        modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode_")}
        if {k for k, v in modes.items() if v} != {"pooling_mode_mean_tokens"}:
            return None
        config = root / "config_sentence_transformers.json"
        if config.is_file() and _read_json(config).get("prompts"):
            return None
        limit = int(_read_json(root / "sentence_bert_config.json")["max_seq_length"])
        if not (root / "tokenizer.json").is_file() or limit < 1:
            return None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return Pipeline(root.resolve(), limit, normalize=len(types) == 3)


def export_is_current(pipeline: Pipeline) -> bool:
    """True when an export of the model folder as it is now was published (by any
    process, from any folder holding the same model)."""
    try:
        return _is_published(export_dir(pipeline))
    except OSError:  # the model folder changed under us: the torch path decides
        return False


def _is_published(target: Path) -> bool:
    try:
        manifest = _read_json(target / MANIFEST)
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("key") == target.name


class OnnxEncoder:
    """Tokenize once, batch by token count, run the exported network, mean-pool over real
    tokens, L2-normalise (a :class:`TokenEncoder`)."""

    def __init__(self, pipeline: Pipeline, session: Any, tokenizer: Any) -> None:
        self.pipeline = pipeline
        self._session = session
        self._names = {i.name for i in session.get_inputs()}
        # Untruncated, unpadded: the counts decide the batches and what is said to be cut;
        # the cut and the padding are applied to these same tokens (no second pass).
        self._tokenizer = tokenizer
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._pad = _pad_id(tokenizer)
        self._lock = threading.Lock()  # a Tokenizer object is not shared across threads

    @classmethod
    def load(
        cls, pipeline: Pipeline, *, folder: Path | None = None, threads: int | None = None
    ) -> OnnxEncoder | None:
        """The encoder of the pipeline's published export (or of the export in ``folder``,
        not yet published), or None: no export, a stale one (the model folder changed),
        a damaged one, or onnxruntime / tokenizers missing. ``threads`` caps onnxruntime's
        intra-op threads (None: its default, one per core)."""
        try:
            target = folder or export_dir(pipeline)
        except OSError:
            return None
        if folder is None and not _is_published(target):
            return None
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError:
            return None
        if folder is not None:
            return cls._open(pipeline, target, onnxruntime, Tokenizer, threads)
        with reading(target) as still_there:  # not pruned while its files are read
            if not still_there:
                return None
            return cls._open(pipeline, target, onnxruntime, Tokenizer, threads)

    @classmethod
    def _open(
        cls,
        pipeline: Pipeline,
        target: Path,
        onnxruntime: Any,
        tokenizers: Any,
        threads: int | None,
    ) -> OnnxEncoder | None:
        try:
            session = onnxruntime.InferenceSession(
                str(target / MODEL_FILE),
                session_options(onnxruntime, threads),
                providers=["CPUExecutionProvider"],
            )
            tokenizer = tokenizers.from_file(str(target / "tokenizer.json"))
        except Exception:  # damaged: the torch path still works, and exports again
            return None
        return cls(pipeline, session, tokenizer)

    @property
    def max_seq_length(self) -> int:
        return self.pipeline.max_seq_length

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """Each text's word pieces, special tokens included, cut to the model's input as
        its tokenizer would; ``length`` keeps the count before the cut."""
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
        limit = self.max_seq_length
        out = []
        for e in encodings:
            ids, special = e.ids, e.special_tokens_mask
            out.append(
                Tokens(
                    np.asarray(cut_to(ids, special, limit), dtype=np.int32),
                    np.asarray(cut_to(e.type_ids, special, limit), dtype=np.int8),
                    len(ids),
                )
            )
        return out

    def encode_tokens(self, batch: Sequence[Tokens]) -> np.ndarray:
        """One normalised row per item (padded to the batch's longest; padding is masked,
        so a row does not depend on its batch)."""
        feeds = padded(batch, self._pad)
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._names})[0]
        return mean_pool(hidden, feeds["attention_mask"], normalize=self.pipeline.normalize)

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """One row per text, in the order given; batches of at most ``batch_size`` texts
        and ``MAX_BATCH_TOKENS`` padded tokens, cut from the texts sorted by token count."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        tokens = self.tokenize(texts)
        out: np.ndarray | None = None
        for rows in token_batches([len(t.ids) for t in tokens], max_rows=batch_size):
            vectors = self.encode_tokens([tokens[i] for i in rows])
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        assert out is not None
        return out

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, special tokens included, without truncation."""
        return [t.length for t in self.tokenize(texts)]


def session_options(onnxruntime: Any, threads: int | None) -> Any:
    """onnxruntime's options for the local model: errors-only logging (library code never
    prints), ``threads`` intra-op threads (None: one per core), and pool threads that
    sleep when idle. Spinning threads burn a core each between runs (between the batches
    of an index, between the queries of the offline judge): on a shared 2-core machine that
    is CPU taken from everything else, the tokenizer and the next batch included."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def mean_pool(hidden: np.ndarray, mask: np.ndarray, *, normalize: bool) -> np.ndarray:
    """sentence-transformers' mean pooling: the average of the token vectors the attention
    mask keeps (Reimers & Gurevych 2019), then optionally L2 normalisation. One batched
    product (mask @ hidden) instead of a masked copy of the activations."""
    weights = mask.astype(np.float32)
    summed = np.matmul(weights[:, None, :], np.asarray(hidden, dtype=np.float32))[:, 0, :]
    pooled = summed / np.clip(weights.sum(axis=1, keepdims=True), 1e-9, None)
    if not normalize:
        return pooled
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)


def _pad_id(tokenizer: Any) -> int:
    token = tokenizer.token_to_id("[PAD]")
    return int(token) if token is not None else 0


def export(model: Any, pipeline: Pipeline) -> bool:
    """Export a loaded ``SentenceTransformer`` of ``pipeline`` to ONNX, check it against the
    model on probe texts, and publish it atomically. False when it cannot (no ``onnx`` or
    ``onnxruntime`` package, an export or check that fails): the torch path goes on."""
    try:
        import onnx  # noqa: F401 - torch.onnx.export needs it
        import onnxruntime  # noqa: F401 - an export nobody can run is useless
        import torch
    except ImportError:
        return False
    try:
        target = export_dir(pipeline)
        with writing(exports_root()) as work:
            _export_network(model, work / MODEL_FILE, torch)
            shutil.copyfile(pipeline.folder / "tokenizer.json", work / "tokenizer.json")
            encoder = OnnxEncoder.load(pipeline, folder=work)
            cosine = agreement(model, encoder) if encoder is not None else 0.0
            if cosine < MIN_COSINE:
                return False
            manifest = {"key": target.name, "min_cosine": cosine, "made_with": _versions()}
            (work / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            _publish(work, target)
        return True
    except Exception:  # exporting is an optimisation: any failure leaves the torch path
        return False


def _versions() -> dict[str, str | None]:
    """Which packages made and checked an export (provenance only: not part of its key)."""
    out: dict[str, str | None] = {}
    for name in ("torch", "onnx", "onnxruntime", "sentence-transformers"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _export_network(model: Any, path: Path, torch: Any) -> None:
    """The transformer of a ``SentenceTransformer`` as an ONNX graph with dynamic batch and
    sequence axes, returning the last hidden state (pooling stays in numpy)."""
    import inspect
    import warnings

    network = model[0].auto_model.to("cpu").eval()
    accepted = inspect.signature(network.forward).parameters
    names = [n for n in _INPUTS if n in accepted]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs: Any) -> Any:
            return self.network(**dict(zip(names, inputs, strict=True))).last_hidden_state

    sample = model.tokenizer(["a probe", "a longer probe text"], padding=True, return_tensors="pt")
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Hidden(),
            tuple(sample[n] for n in names),
            str(path),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def agreement(model: Any, encoder: OnnxEncoder) -> float:
    """The lowest cosine between the torch model's and the encoder's vectors of the probe
    texts (short, non-ASCII, over the token limit, one character)."""
    expected = np.asarray(model.encode(list(_PROBES), convert_to_numpy=True), dtype=np.float32)
    got = encoder.encode(_PROBES, batch_size=len(_PROBES))
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    return float((expected * got).sum(axis=1).min())


def _publish(work: Path, target: Path) -> None:
    """Move the finished export into place (a rename: readers see all of it or nothing).
    When another process published the same export first, its copy stays and this one is
    dropped; a damaged folder in the way is replaced."""
    try:
        os.rename(work, target)
        return
    except OSError:  # something is there already
        if _is_published(target):
            return
    old = target.with_name(f".old-{os.getpid()}-{target.name}")
    with contextlib.suppress(OSError):
        os.rename(target, old)
    with contextlib.suppress(OSError):  # another process published meanwhile
        os.rename(work, target)
    shutil.rmtree(old, ignore_errors=True)


__all__ = [
    "BACKEND_ENV",
    "CACHE_ENV",
    "MIN_COSINE",
    "OnnxEncoder",
    "Pipeline",
    "agreement",
    "backend_choice",
    "cache_root",
    "export",
    "export_dir",
    "export_is_current",
    "mean_pool",
    "pipeline_of",
    "session_options",
]
