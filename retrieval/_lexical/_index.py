"""The BM25 index: eager per-(term, document) scores, saved as plain ``.npy`` files plus a
JSON vocabulary, and read back through memory maps.

Files, all inside the directory the caller names (they share it with other index files):

- ``bm25.data.npy``     float32, the scores, column after column
- ``bm25.indices.npy``  int32, the document of each score
- ``bm25.indptr.npy``   int64, ``n_terms + 1`` column starts
- ``bm25.sums.npy``     uint64, the checksum of each column (format 2, see ``_integrity``)
- ``bm25.json``         format version, tokenizer id, k1, b, document count, avgdl,
                        vocabulary, the digests of the column starts and sums, and the
                        checksum of all that (format 2)

The caller makes the set atomic (it writes into a fresh generation folder); this module just
writes files, the JSON last. Format 1 (no checksums) is read only where asked for
(``legacy_ok``: to reuse an old index's work while upgrading it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from kbgraph.errors import ConfigError, IndexCorruptError, IndexNotFoundError

from .._fs import Read, fsync_dir, load_npy
from .._ranking import check_k, check_mask, top_k_indices
from .._records import json_checksum
from ._bm25 import DEFAULT_B, DEFAULT_K1, ScoreColumns, avg_doc_len, query_scores, score_columns
from ._integrity import array_digest, column_sum, column_sums
from ._tokenize import TOKENIZER_ID, analyse_weighted, check_tokenizer

FORMAT_VERSION = 2
META_FILE = "bm25.json"
SUMS_FILE = "bm25.sums.npy"
ARRAY_FILES: dict[str, tuple[str, np.dtype[Any]]] = {
    "data": ("bm25.data.npy", np.dtype(np.float32)),
    "indices": ("bm25.indices.npy", np.dtype(np.int32)),
    "indptr": ("bm25.indptr.npy", np.dtype(np.int64)),
}
BM25_FILES: tuple[str, ...] = (
    *(name for name, _ in ARRAY_FILES.values()),
    SUMS_FILE,
    META_FILE,
)
"""Every file :meth:`BM25Index.save` writes, for callers that size or copy an index."""

_REBUILD = "rebuild the index (kbgraph index <folder>)"


class BM25Index:
    """Okapi BM25 (Lucene variant, see ``_bm25``) over a fixed list of documents, numbered
    from 0 in the order given to :meth:`build`."""

    def __init__(
        self,
        columns: ScoreColumns,
        vocab: Sequence[str],
        *,
        n_docs: int,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        avgdl: float = 0.0,
        tokenizer: str = TOKENIZER_ID,
        sums: np.ndarray | None = None,
        directory: Path | None = None,
    ) -> None:
        """``sums``: the column checksums to verify reads against (None: not checked, an
        index built in memory or read from format 1); ``directory`` names it in errors."""
        # Plain ndarray views of memory maps: np.memmap's per-slice Python hooks cost more
        # than the slices themselves on short posting lists.
        self._columns = ScoreColumns(
            data=_read_only(columns.data),
            indices=_read_only(columns.indices),
            indptr=_read_only(columns.indptr),
        )
        self._vocab = list(vocab)
        self._term_id = {term: i for i, term in enumerate(self._vocab)}
        self.n_docs = n_docs
        self.k1 = k1
        self.b = b
        self.avgdl = avgdl
        self.tokenizer = tokenizer
        self._sums = sums
        self._verified: set[int] = set()
        self._where = str(directory) if directory is not None else "the BM25 index"

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        tokenizer: str = TOKENIZER_ID,
    ) -> BM25Index:
        """Index ``texts``; document ``i`` is ``texts[i]``. ``tokenizer`` names the analyser
        (``lexical.TOKENIZERS``); queries are analysed by the same one."""
        if not (k1 >= 0 and 0 <= b <= 1):
            raise ConfigError(
                f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}; "
                "the usual values are k1=1.5, b=0.75."
            )
        from ._corpus import tokenize_corpus  # building only: a search never loads it

        corpus = tokenize_corpus(texts, tokenizer)
        columns = score_columns(
            corpus.term_ids,
            corpus.doc_lengths,
            len(corpus.vocab),
            k1,
            b,
            norm_lengths=corpus.norm_lengths,
            weights=corpus.weights,
        )
        return cls(
            columns,
            corpus.vocab,
            n_docs=len(corpus.doc_lengths),
            k1=k1,
            b=b,
            avgdl=avg_doc_len(corpus.norm_lengths),
            tokenizer=tokenizer,
        )

    def __len__(self) -> int:
        return self.n_docs

    @property
    def columns(self) -> ScoreColumns:
        """The precomputed score columns (read-only views; memory maps after :meth:`load`)."""
        return self._columns

    def term_ids(self, query: str) -> list[int]:
        """The query's terms that occur in the corpus, as term ids (repeats kept)."""
        return self._weighted_terms(query)[0]

    def _weighted_terms(self, query: str) -> tuple[list[int], list[float]]:
        lookup = self._term_id.get
        terms, weights, _ = analyse_weighted(query, self.tokenizer)
        found = [(lookup(term), w) for term, w in zip(terms, weights, strict=True)]
        kept = [(t, w) for t, w in found if t is not None]
        return [t for t, _ in kept], [w for _, w in kept]

    def scores(self, query: str) -> np.ndarray:
        """BM25 of every document (float32, length ``len(self)``); 0 where no term matches.
        Every column read is first checked against its checksum (``IndexCorruptError``)."""
        terms, weights = self._weighted_terms(query)
        self._verify(terms)
        scores = query_scores(self._columns, terms, self.n_docs, weights)
        if len(scores) != self.n_docs:
            raise IndexCorruptError(
                f"BM25 index refers to document {len(scores) - 1} but holds {self.n_docs} "
                f"documents; {_REBUILD}."
            )
        return scores

    def _verify(self, terms: list[int]) -> None:
        if self._sums is None:
            return
        columns = self._columns
        for term in set(terms) - self._verified:
            start, end = int(columns.indptr[term]), int(columns.indptr[term + 1])
            found = column_sum(columns.data[start:end], columns.indices[start:end])
            if found != self._sums[term]:
                raise IndexCorruptError(
                    f"{self._where}: the scores of the term {self._vocab[term]!r} do not "
                    f"match their checksum (bm25.data.npy or bm25.indices.npy is damaged); "
                    f"{_REBUILD}."
                )
            self._verified.add(term)

    def forget_checks(self) -> None:
        """Check every column again when next read (its files changed since)."""
        self._verified.clear()

    def verify_all(self) -> None:
        """Check every column against its checksum at once (``IndexCorruptError``)."""
        if self._sums is None:
            return
        columns = self._columns
        found = column_sums(columns.data, columns.indices, columns.indptr)
        bad = np.flatnonzero(found != self._sums)
        if len(bad):
            raise IndexCorruptError(
                f"{self._where}: {len(bad)} term column(s) do not match their checksums, "
                f"the first of {self._vocab[int(bad[0])]!r} (bm25.data.npy or "
                f"bm25.indices.npy is damaged); {_REBUILD}."
            )

    def same_as(self, other: BM25Index) -> bool:
        """Whether ``other`` holds the same terms and scores (to compare an index with
        one built again from its texts)."""
        mine, theirs = self._columns, other._columns
        return (
            self._vocab == other._vocab
            and self.n_docs == other.n_docs
            and np.array_equal(mine.indptr, theirs.indptr)
            and np.array_equal(mine.indices, theirs.indices)
            and np.allclose(mine.data, theirs.data, rtol=1e-5, atol=0)
        )

    def top_k(
        self, query: str, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents with a score > 0, best first, ties by document number.
        ``mask`` (one bool per document) restricts the documents *before* selection. Returns
        document numbers (int64) and scores (float32)."""
        check_k(k)
        mask = check_mask(mask, self.n_docs)
        scores = self.scores(query)
        if mask is not None:
            # Only scores > 0 are returned, so zeroing a document rules it out before
            # selection, at the cost of one pass and no index array.
            np.multiply(scores, mask, out=scores)
        best = top_k_indices(scores, k)
        best = best[scores[best] > 0]
        return best, scores[best]

    def save(self, directory: Path) -> None:
        """Write the index files into ``directory`` (created if missing), each fsynced so
        that a generation published after this call survives a crash."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        columns = self._columns
        sums = column_sums(columns.data, columns.indices, columns.indptr)
        for attr, (name, dtype) in ARRAY_FILES.items():
            _save_array(directory / name, np.ascontiguousarray(getattr(columns, attr), dtype=dtype))
        _save_array(directory / SUMS_FILE, sums)
        meta: dict[str, Any] = {
            "format": FORMAT_VERSION,
            "tokenizer": self.tokenizer,
            "k1": self.k1,
            "b": self.b,
            "n_docs": self.n_docs,
            "avgdl": self.avgdl,
            "vocab": self._vocab,
            "digests": {"indptr": array_digest(columns.indptr), "sums": array_digest(sums)},
        }
        meta["checksum"] = json_checksum(meta)
        # Written last: a folder with the JSON has every array file too.
        with open(directory / META_FILE, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, ensure_ascii=False)
            _sync(fh)
        fsync_dir(directory)

    @classmethod
    def load(
        cls, directory: Path, *, legacy_ok: bool = False, read: Read | None = None
    ) -> BM25Index:
        """Open an index written by :meth:`save`; the arrays stay on disk (memory-mapped),
        or are the bytes ``read`` returns (a generation held in memory). The metadata, the
        column starts and the column checksums are checked here, each column when a query
        first reads it. ``legacy_ok`` also opens format 1, unchecked."""
        directory = Path(directory)
        meta = _read_meta(directory, legacy_ok=legacy_ok, read=read)
        arrays = {
            attr: _open_array(directory, name, dtype, read)
            for attr, (name, dtype) in ARRAY_FILES.items()
        }
        columns = ScoreColumns(**arrays)
        _check_shapes(columns, meta, directory)
        sums = None
        if meta["format"] >= 2:
            sums = _open_array(directory, SUMS_FILE, np.dtype(np.uint64), read)
            _check_digests(meta, columns.indptr, sums, directory)
        return cls(
            columns,
            meta["vocab"],
            n_docs=meta["n_docs"],
            k1=meta["k1"],
            b=meta["b"],
            avgdl=meta["avgdl"],
            tokenizer=meta["tokenizer"],
            sums=sums,
            directory=directory,
        )


def _save_array(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        _sync(fh)


def _check_digests(
    meta: dict[str, Any], indptr: np.ndarray, sums: np.ndarray, directory: Path
) -> None:
    digests = meta.get("digests")
    expected = {"indptr": array_digest(indptr), "sums": array_digest(sums)}
    recorded = digests if isinstance(digests, dict) else {}
    damaged = [f"bm25.{name}.npy" for name in expected if recorded.get(name) != expected[name]]
    if damaged or len(sums) != len(indptr) - 1:
        files = " and ".join(damaged) or SUMS_FILE
        raise IndexCorruptError(
            f"{directory}: {files} does not match the digest bm25.json records; {_REBUILD}."
        )


def _sync(fh: IO[Any]) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _read_only(array: np.ndarray) -> np.ndarray:
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


def _read_meta(
    directory: Path, *, legacy_ok: bool = False, read: Read | None = None
) -> dict[str, Any]:
    path = directory / META_FILE
    if not path.is_file():
        raise IndexNotFoundError(
            f"no BM25 index in {directory} ({META_FILE} is missing); {_REBUILD}."
        )
    try:
        meta = json.loads((read or Path.read_bytes)(path).decode("utf-8"))
        keys = ("format", "tokenizer", "k1", "b", "n_docs", "avgdl", "vocab")
        missing = [key for key in keys if key not in meta]
    except (OSError, ValueError, TypeError) as exc:
        raise IndexCorruptError(
            f"{path} is not a valid BM25 index file ({exc}); {_REBUILD}."
        ) from exc
    if missing:
        raise IndexCorruptError(f"{path} lacks {', '.join(missing)}; {_REBUILD}.")
    formats = (1, FORMAT_VERSION) if legacy_ok else (FORMAT_VERSION,)
    if meta["format"] not in formats:
        raise IndexCorruptError(
            f"{path} has format {meta['format']}; this version reads format "
            f"{FORMAT_VERSION}; {_REBUILD}."
        )
    try:
        check_tokenizer(meta["tokenizer"])
    except IndexCorruptError as exc:
        raise IndexCorruptError(f"{path}: {exc}") from None
    if meta["format"] >= 2:
        fields = {k: v for k, v in meta.items() if k != "checksum"}
        if meta.get("checksum") != json_checksum(fields):
            raise IndexCorruptError(f"{path} does not match its checksum (damaged); {_REBUILD}.")
    return dict(meta)


def _open_array(
    directory: Path, name: str, dtype: np.dtype[Any], read: Read | None = None
) -> np.ndarray:
    path = directory / name
    try:
        array = load_npy(path, read)
    except FileNotFoundError as exc:
        raise IndexCorruptError(f"{path} is missing; {_REBUILD}.") from exc
    except (OSError, ValueError) as exc:
        raise IndexCorruptError(f"{path} is not a valid .npy file ({exc}); {_REBUILD}.") from exc
    if array.dtype != dtype or array.ndim != 1:
        raise IndexCorruptError(
            f"{path} holds {array.dtype} of shape {array.shape}, expected a 1-D "
            f"{dtype} array; {_REBUILD}."
        )
    return np.asarray(array)


def _check_shapes(columns: ScoreColumns, meta: dict[str, Any], directory: Path) -> None:
    indptr = columns.indptr
    problems = []
    if len(indptr) != len(meta["vocab"]) + 1:
        problems.append(f"{len(indptr)} column starts for {len(meta['vocab'])} terms")
    elif indptr[0] != 0 or indptr[-1] != len(columns.data):
        problems.append(f"columns end at {indptr[-1]} but {len(columns.data)} scores exist")
    if len(columns.indices) != len(columns.data):
        problems.append(f"{len(columns.indices)} document ids for {len(columns.data)} scores")
    if problems:
        raise IndexCorruptError(
            f"BM25 index in {directory} is inconsistent ({'; '.join(problems)}); {_REBUILD}."
        )


__all__ = ["BM25_FILES", "FORMAT_VERSION", "BM25Index"]
