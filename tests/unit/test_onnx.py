"""The ONNX path's decisions without a model: which sentence-transformers folders it can
reproduce, when an export is current, where it lives (named by content, shared by folders
holding the same model) and what is pruned, the pooling math, and the settings by
environment."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval._embeddings import LocalEmbeddings, _onnx_cache
from kbgraph.retrieval._embeddings._onnx import (
    BACKEND_ENV,
    CACHE_ENV,
    backend_choice,
    cache_root,
    export_dir,
    export_is_current,
    mean_pool,
    pipeline_of,
)
from kbgraph.retrieval._embeddings._onnx_cache import GRACE_S, LOCK, MANIFEST, prune

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
        (root / "tokenizer.json").write_text(changes.get("tokenizer_text", "{}"))
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


def _publish_fake_export(target: Path) -> Path:
    """What a published export looks like to a reader (no real network needed here)."""
    target.mkdir(parents=True)
    (target / LOCK).touch()
    (target / MANIFEST).write_text(json.dumps({"key": target.name}))
    return target


def test_an_export_is_current_only_for_the_model_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    pipeline = pipeline_of(_model_folder(tmp_path / "m"))
    assert pipeline is not None
    target = export_dir(pipeline)
    assert target.parent == tmp_path / "cache" / "onnx" / "exports"
    assert not export_is_current(pipeline)
    _publish_fake_export(target)
    assert export_is_current(pipeline)
    (tmp_path / "m" / "model.safetensors").write_bytes(b"new weights, another size")
    assert export_dir(pipeline) != target  # another model: another export
    assert not export_is_current(pipeline)
    (tmp_path / "m" / "model.safetensors").write_bytes(b"weights")  # the same bytes again
    assert export_dir(pipeline) == target and export_is_current(pipeline)
    (target / MANIFEST).write_text("{broken")
    assert not export_is_current(pipeline)


def test_two_folders_with_the_same_model_share_one_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 20): the export was keyed by the model folder's path, so every
    virtualenv (each with its own copy of the packaged model) kept its own 90 MB export."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    first = pipeline_of(_model_folder(tmp_path / "venv-a" / "model"))
    second = pipeline_of(_model_folder(tmp_path / "venv-b" / "model"))
    assert first is not None and second is not None and first.folder != second.folder
    assert export_dir(first) == export_dir(second)
    _publish_fake_export(export_dir(first))
    assert export_is_current(second)
    (tmp_path / "venv-b" / "model" / "tokenizer.json").write_text('{"other": 1}')
    assert export_dir(second) != export_dir(first)  # not the same model any more


def test_the_key_is_hashed_once_while_the_files_stay_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing ~90 MB takes a quarter of a second: a cold query must not pay it."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    pipeline = pipeline_of(_model_folder(tmp_path / "m"))
    assert pipeline is not None
    hashed: list[Path] = []
    real = _onnx_cache.content_key

    def counting(folder: Path, inputs: dict[str, Any]) -> Any:
        hashed.append(folder)
        return real(folder, inputs)

    monkeypatch.setattr(_onnx_cache, "content_key", counting)
    first = export_dir(pipeline)
    assert export_dir(pipeline) == export_dir(pipeline) == first and len(hashed) == 1
    weights = tmp_path / "m" / "model.safetensors"
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert export_dir(pipeline) == first and len(hashed) == 2  # touched: hashed again


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_exports_no_model_folder_needs_are_pruned_and_others_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    exports = tmp_path / "cache" / "onnx" / "exports"
    kept = pipeline_of(_model_folder(tmp_path / "kept"))
    gone = pipeline_of(_model_folder(tmp_path / "gone", tokenizer_text='{"v": 2}'))
    assert kept is not None and gone is not None
    live, dead = _publish_fake_export(export_dir(kept)), _publish_fake_export(export_dir(gone))
    shutil.rmtree(tmp_path / "gone")  # its virtualenv was deleted
    young = _publish_fake_export(exports / ("a" * 32))  # no record yet: being set up
    in_use = _publish_fake_export(exports / ("b" * 32))
    crashed = exports / ".export-crashed"
    crashed.mkdir()
    for path in (live, dead, in_use, crashed):
        _age(path, GRACE_S + 60)
    with _onnx_cache.reading(in_use), _onnx_cache.writing(exports) as writer:
        _age(writer, GRACE_S + 60)
        removed = set(prune())
        assert writer.is_dir()  # its writer holds the lock
    assert removed == {dead.name, crashed.name}
    assert live.is_dir() and young.is_dir() and in_use.is_dir()
    assert not dead.exists() and not crashed.exists()
    assert [p.stem for p in (tmp_path / "cache" / "onnx" / "folders").iterdir()] == [
        _onnx_cache._record_path(kept.folder).stem
    ]


def test_path_keyed_exports_of_earlier_versions_are_pruned_once_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exports kbgraph wrote before content keys, one per model folder path."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    onnx = tmp_path / "cache" / "onnx"
    served = pipeline_of(_model_folder(tmp_path / "served"))
    other = _model_folder(tmp_path / "old-code-only")
    assert served is not None

    def legacy(folder: Path) -> Path:
        name = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
        path = onnx / name
        path.mkdir(parents=True)
        fingerprint = {"version": 1, "folder": str(folder), "files": {}}
        (path / MANIFEST).write_text(json.dumps({"fingerprint": fingerprint}))
        return path

    by_new_code = legacy(served.folder)
    by_old_code = legacy(other.resolve())
    orphan = legacy(tmp_path / "deleted-venv" / "model")
    export_dir(served)  # this version serves that folder now: records it, prunes
    assert not by_new_code.exists() and not orphan.exists()
    assert by_old_code.is_dir()  # another virtualenv on an earlier kbgraph may still use it


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


def test_cache_root_defaults_to_the_home_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The documented default, ~/.cache/kbgraph: the rename to private modules once turned
    # ".cache" into "._cache" here, moving every user's ONNX exports and BEIR work folders.
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "kbgraph"


def test_onnx_forced_without_an_export_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setenv(BACKEND_ENV, "onnx")
    model = LocalEmbeddings(_model_folder(tmp_path / "m"))
    with pytest.raises(ConfigError, match="no usable ONNX export"):
        model.embed_query("hello")


def test_the_int8_export_has_its_own_key_and_record_and_neither_prunes_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One record per model folder would hold one precision's key: asking for the int8
    export then left the fp32 one unreferenced (pruned), and each key hashed again."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    fp32 = pipeline_of(_model_folder(tmp_path / "m"))
    assert fp32 is not None
    int8 = fp32.at("int8")
    assert fp32.key_inputs() == {"max_seq_length": 256, "normalize": True}  # keys as before
    assert export_dir(int8) != export_dir(fp32)
    exports = [_publish_fake_export(export_dir(p)) for p in (fp32, int8)]
    for path in exports:
        _age(path, GRACE_S + 60)
    assert export_dir(fp32) == exports[0] and export_dir(int8) == exports[1]
    assert prune() == []
    assert all(path.is_dir() for path in exports)
    assert export_is_current(fp32) and export_is_current(int8)
