"""The doorway of ``kbgraph.retrieval``: the engine's pieces the subgraph, the evals and the
application build on (the context format, embeddings, loaders and safe reads, ranking math,
the watcher). Not public API; what every doorway holds to:
``tests/unit/test_doorways.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

if TYPE_CHECKING:
    from ._config import FusionMethod, check_search_mode
    from ._context import PREAMBLE, fence_for, longest_backtick_run, source_block
    from ._embeddings import (
        DEFAULT_TIMEOUT,
        LocalEmbeddings,
        packaged_model_dir,
        parse_spec,
        resolve_embeddings,
        spec_forms,
    )
    from ._embeddings.fake import FakeEmbeddings
    from ._filters import SearchKind, path_matches, search_kinds
    from ._globs import MAX_FILTER_PATHS
    from ._integrations import init_integration
    from ._loaders import SkipFile, load_bytes, open_regular_file, read_regular_file
    from ._ranking import FusedItem, rrf_contribution, rrf_fuse
    from ._records import FileKind
    from ._scan import file_kind
    from ._served import read_served
    from ._storage import is_database, no_versions
    from ._watch import DEBOUNCE_MS, FolderWatcher, WatchRun

__getattr__ = lazy_imports(globals())
