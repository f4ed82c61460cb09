"""A local model at int8 (``local#int8``): its fp32 ONNX export (:mod:`._onnx`) with int8
weights, made once per machine and published beside it under its own key.

onnxruntime's dynamic quantisation: weights int8 per output channel, activations quantised
per batch at run time; no calibration data, so the same export every time. It is another
model (an index records ``…#int8``; its vectors are not the fp32 ones: cosine 0.995 in the
median on SciFact's documents), at about half the CPU on documents with SciFact's nDCG@10
kept within 0.005 (``benchmarks/bench_int8.py``, docs/explanation/measured.md)."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._onnx import (
    MODEL_FILE,
    OnnxEncoder,
    Pipeline,
    _publish,
    _versions,
    agreement,
    export,
    export_dir,
    export_is_current,
)
from ._onnx_cache import MANIFEST, exports_root, reading, writing

# The probe texts (one character, code over the token limit) measured 0.973 at the lowest,
# SciFact's documents 0.989: below this the quantisation went wrong, not the model.
MIN_COSINE_INT8 = 0.95


def quantize(model: Any, pipeline: Pipeline) -> str | None:
    """Publish the int8 export of ``pipeline`` (``precision="int8"``) from its fp32 export
    (published first), checked against the loaded ``SentenceTransformer`` ``model``. None
    once it is published; else why it could not be (said to the user as is)."""
    fp32 = pipeline.at("fp32")
    if not (export_is_current(fp32) or export(model, fp32)):
        return "the fp32 ONNX export could not be made (it needs the onnx and onnxruntime packages)"
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        return f"onnxruntime's quantisation cannot be imported ({exc})"
    try:
        return _quantized(model, pipeline, fp32, quantize_dynamic, QuantType.QInt8)
    except Exception as exc:  # an optimisation's failure: the caller says what to do
        return f"quantising failed: {type(exc).__name__}: {' '.join(str(exc).split())}"


def _quantized(model: Any, pipeline: Pipeline, fp32: Pipeline, run: Any, int8: Any) -> str | None:
    source, target = export_dir(fp32), export_dir(pipeline)
    with writing(exports_root()) as work, reading(source) as still_there:
        if not still_there:
            return "the fp32 export was removed while it was read; try again"
        with _without_quantisation_advice():
            run(source / MODEL_FILE, work / MODEL_FILE, weight_type=int8, per_channel=True)
        shutil.copyfile(source / "tokenizer.json", work / "tokenizer.json")
        encoder = OnnxEncoder.load(pipeline, folder=work)
        cosine = agreement(model, encoder) if encoder is not None else 0.0
        if cosine < MIN_COSINE_INT8:
            return f"the int8 network agrees with the model at cosine {cosine:.3f} only"
        manifest = {"key": target.name, "min_cosine": cosine, "made_with": _versions()}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _publish(work, target)
    return None


class _QuantisationAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname or "quantization" not in record.pathname


@contextmanager
def _without_quantisation_advice() -> Iterator[None]:
    """onnxruntime's quantiser logs advice to pre-process the model on the root logger
    (library code never prints). A filter on that logger drops only its own records: other
    threads' logging goes on (a level change would hide theirs too)."""
    root, advice = logging.getLogger(), _QuantisationAdvice()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


__all__ = ["MIN_COSINE_INT8", "quantize"]
