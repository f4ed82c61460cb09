"""The trained answer verifier: a cross-encoder that reads a claim and a few source sentences
together and gives the probability that they support it.

All-MiniLM-L6-v2 (the packaged embedding model's weights, Apache-2.0) fine-tuned on
(claim, evidence) pairs by ``training/train_verifier.py`` from the data that
``training/verifier_data.py`` writes (the recipe and its sources are in that file's
docstring and ``training/README.md``), exported to ONNX and quantised to int8. It ships in
the package (``verifier/model.onnx`` and the model's ``tokenizer.json``) and runs on
onnxruntime: no torch, no download.

Why a learned model beside the lexical evidence: word overlap and sentence cosine cannot
tell "rejected with status 400" from "…status 413", nor a relation reversed, nor an
attribute moved to the other entity; a cross-encoder attends across claim and evidence.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kbgraph.errors import ConfigError

FOLDER = Path(__file__).resolve().parent / "verifier"
MAX_LENGTH = 128
"""Tokens of claim + evidence, as in training (``training/train_verifier.py``)."""
BATCH = 1
"""Pairs per model run. One: the int8 model quantises its activations per run (dynamic
quantisation), so in a batch a pair's score depended on its neighbours and their padding
(0.38 batched against 0.48 alone); alone there is no padding to pay for either."""
CACHE_SIZE = 20_000


class SupportVerifier(Protocol):
    """What the offline judge asks of a verifier (the ONNX model, or a fake in tests)."""

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the evidence supports the claim) for each ``(claim, evidence)``, in order."""
        ...


class Verifier:
    """Scores (claim, evidence) pairs: P(the evidence supports the claim). Thread-safe;
    results are cached per pair."""

    def __init__(self, folder: Path = FOLDER, *, threads: int | None = 1) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:  # the local extra brings both
            raise ConfigError(
                "the answer verifier needs onnxruntime and tokenizers: pip install 'kbgraph[local]'"
            ) from exc
        model = folder / "model.onnx"
        if not model.is_file():
            raise ConfigError(
                f"the answer verifier's weights are missing ({model}); make them with "
                "`make verifier` (training/README.md) or pass the folder that holds them"
            )
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_LENGTH, strategy="longest_first")
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()
        self.manifest: dict[str, Any] = _manifest(folder)

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) for each ``(claim, evidence)``, in order."""
        with self._lock:
            missing = [p for p in dict.fromkeys(pairs) if p not in self._cache]
        # Similar lengths together: less padding, less work.
        missing.sort(key=lambda p: len(p[0]) + len(p[1]))
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            found = self._run(batch)
            with self._lock:
                self._cache.update(zip(batch, found, strict=True))
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        with self._lock:
            return [self._cache[p] for p in pairs]

    def _run(self, batch: Sequence[tuple[str, str]]) -> list[float]:
        encoded = self._tokenizer.encode_batch(list(batch))
        width = max(len(e.ids) for e in encoded)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encoded):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        logits = self._session.run(None, inputs)[0].reshape(-1)
        return [float(v) for v in 1.0 / (1.0 + np.exp(-logits))]


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


__all__ = ["FOLDER", "MAX_LENGTH", "SupportVerifier", "Verifier"]
