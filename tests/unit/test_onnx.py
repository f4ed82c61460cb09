"""The ONNX path's decisions without a model: which sentence-transformers folders it can
reproduce, when an export is current, the pooling math, and the settings by environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval.embeddings import LocalEmbeddings
from kbgraph.retrieval.embeddings._onnx import (
    BACKEND_ENV,
    CACHE_ENV,
    MANIFEST,
    backend_choice,
    cache_root,
    export_is_current,
    mean_pool,
    pipeline_of,
)

ST = "sentence_transformers.models."


def _model_folder(root: Path, **changes: Any) -> Path:
    """A sentence-transformers folder of all-MiniLM-L6-v2's shape (no weights needed)."""
    modules = changes.get("modules") or [
        {"idx": 0, "name": "0", "path": "", "type": ST + "Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": ST + "Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": ST + "Normalize"},
    ]
    pooling = {"word_embedding_dimension": 4, "pooling_mode_mean_tokens": True}
    pooling |= changes.get("pooling", {})
    root.mkdir(parents=True)
    (root / "1_Pooling").mkdir()
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    (root / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": changes.get("prompts", {})})
    )
    if changes.get("tokenizer", True):
        (root / "tokenizer.json").write_text("{}")
    (root / "model.safetensors").write_bytes(b"weights")
    return root


def test_the_minilm_shape_is_reproduced(tmp_path: Path) -> None:
    pipeline = pipeline_of(_model_folder(tmp_path / "m"))
    assert pipeline is not None
    assert pipeline.max_seq_length == 256 and pipeline.normalize


@pytest.mark.parametrize(
    "changes",
    [
        {"pooling": {"pooling_mode_max_tokens": True}},
        {"pooling": {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}},
        {"prompts": {"query": "query: "}},
        {"tokenizer": False},
        {"modules": [{"idx": 0, "name": "0", "path": "", "type": ST + "Transformer"}]},
        {
            "modules": [
                {"idx": 0, "name": "0", "path": "", "type": ST + "Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": ST + "Pooling"},
                {"idx": 2, "name": "2", "path": "2_Dense", "type": ST + "Dense"},
            ]
        },
    ],
    ids=["max-pooling", "cls-pooling", "prompts", "no-tokenizer-json", "no-pooling", "dense"],
)
def test_other_pipelines_keep_the_sentence_transformers_path(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    assert pipeline_of(_model_folder(tmp_path / "m", **changes)) is None


def test_a_folder_that_is_no_model_is_refused(tmp_path: Path) -> None:
    assert pipeline_of(tmp_path) is None
    (tmp_path / "modules.json").write_text("not json")
    assert pipeline_of(tmp_path) is None


def test_an_export_is_current_only_for_the_folder_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    pipeline = pipeline_of(_model_folder(tmp_path / "m"))
    assert pipeline is not None
    assert pipeline.export_dir.is_relative_to(tmp_path / "cache" / "onnx")
    assert not export_is_current(pipeline)
    pipeline.export_dir.mkdir(parents=True)
    manifest = pipeline.export_dir / MANIFEST
    manifest.write_text(json.dumps({"fingerprint": pipeline.fingerprint()}))
    assert export_is_current(pipeline)
    (tmp_path / "m" / "model.safetensors").write_bytes(b"new weights, another size")
    assert not export_is_current(pipeline)  # the model changed: export again
    manifest.write_text("{broken")
    assert not export_is_current(pipeline)


def test_mean_pooling_averages_the_real_tokens_only() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(mean_pool(hidden, mask, normalize=False), [[2.0, 2.0]])
    np.testing.assert_allclose(
        mean_pool(hidden, mask, normalize=True), [[2**-0.5, 2**-0.5]], rtol=1e-6
    )


def test_backend_and_cache_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert backend_choice() == "auto"
    monkeypatch.setenv(BACKEND_ENV, " TORCH ")
    assert backend_choice() == "torch"
    monkeypatch.setenv(BACKEND_ENV, "gpu")
    with pytest.raises(ConfigError, match="auto, onnx or torch"):
        backend_choice()
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "kbgraph"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"


def test_onnx_forced_without_an_export_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setenv(BACKEND_ENV, "onnx")
    model = LocalEmbeddings(_model_folder(tmp_path / "m"))
    with pytest.raises(ConfigError, match="no usable ONNX export"):
        model.embed_query("hello")
