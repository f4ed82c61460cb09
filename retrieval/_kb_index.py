"""A knowledge base's indexing: one run brought to a report, and what changed in the
folder since the live version was built (file metadata only)."""

from __future__ import annotations

from kbgraph.errors import IndexNotFoundError

from ._freshness import changed_files, count_stale
from ._indexer import IndexPlan, run_index, settings_match
from ._kb_model import EmbeddingModel
from ._kb_reader import LiveReader
from ._kb_stats import stats_from
from ._progress import ProgressCallback, ignore_progress
from ._records import SkippedFile
from ._reports import IndexChanges, IndexReport
from ._scan import ScanResult, scan_folder
from ._search import REBUILD_WITH_FLAG, check_index_model


def index(
    plan: IndexPlan,
    model: EmbeddingModel,
    live: LiveReader,
    progress: ProgressCallback | None,
    allow_model_change: bool,
) -> IndexReport:
    """``KnowledgeBase.index``: one incremental run of ``plan``, and its report."""
    model.check_usable()
    if not (plan.rebuild or allow_model_change):
        recorded = plan.store.recorded()
        if recorded.found and recorded.lost is None:
            check_index_model(plan.folder, recorded.embedding, model.meta, REBUILD_WITH_FLAG)
    result = run_index(plan, progress or ignore_progress)
    # Files that changed while the run read the folder: the generation holds what was
    # read, so they are stale already (a rescan reads metadata only).
    stale = stale_files(plan, live)
    stats = stats_from(plan.store, result.meta, live.open().size_bytes(), stale=stale or 0)
    return IndexReport(
        stats=stats,
        embedded=result.embedded,
        reused=result.reused,
        skipped=result.skipped,
        failed_embeddings=len(result.meta.failed_embeddings),
        truncated=result.truncated,
        rebuilt=result.rebuilt,
        warnings=result.warnings,
        repaired=result.repaired,
    )


def _scan(plan: IndexPlan) -> ScanResult:
    return scan_folder(plan.folder, plan.scan, index_dir=plan.store.index_dir)


def stale_files(plan: IndexPlan, live: LiveReader) -> int | None:
    """``KnowledgeBase.stale_files``: None without an index or with other settings."""
    try:
        reader = live.open()
    except IndexNotFoundError:
        return None
    if not settings_match(reader.meta, plan):
        return None
    return count_stale(reader.meta, _scan(plan))


def changes(plan: IndexPlan, live: LiveReader) -> IndexChanges:
    """``KnowledgeBase.changes``: the folder's changes against the live version."""
    reader = live.open()
    if not settings_match(reader.meta, plan):
        return IndexChanges(rebuild=True)
    return changed_files(reader.meta, _scan(plan))


def skipped_files(plan: IndexPlan, live: LiveReader) -> list[SkippedFile]:
    """``KnowledgeBase.skipped_files``: the scan's skips now, then the live version's."""
    reader = live.open()
    scanned = _scan(plan)
    loaded = [
        SkippedFile(rel, record.reason, record.detail)
        for rel, record in sorted(reader.meta.skipped.items())
    ]
    return [*scanned.skipped, *loaded]


__all__ = ["changes", "index", "skipped_files", "stale_files"]
