"""What the layers above use of ``kbgraph.retrieval`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.retrieval``). A name the face exports is imported from the face, and a helper no
layer owns from ``kbgraph._base``; only what the layers above need of this layer's private
modules is lent here. ``tests/unit/test_layers.py`` lets another layer import this layer's
private modules only through here, and reads these imports to see the real edges.

Each name is written once, in the ``if TYPE_CHECKING:`` block below: the type checker reads
it, and at run time :func:`kbgraph._layers.lazy_doorway` derives the lazy table from it, so
that each name loads its module on first use, as the face's do, and a light import stays
light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_doorway

if TYPE_CHECKING:
    from ._config import FusionMethod, check_search_mode
    from ._context import PREAMBLE, fence_for, longest_backtick_run, source_block
    from ._embeddings import (
        DEFAULT_TIMEOUT,
        LocalEmbeddings,
        packaged_model_dir,
        parse_spec,
        resolve_embeddings,
    )
    from ._embeddings.fake import FakeEmbeddings
    from ._filters import SearchKind, path_matches, search_kinds
    from ._globs import check_glob
    from ._integrations import init_integration
    from ._loaders import SkipFile, load_bytes, open_regular_file, read_regular_file
    from ._ranking import FusedItem, rrf_contribution, rrf_fuse
    from ._records import FileKind
    from ._scan import file_kind
    from ._served import read_served
    from ._storage import is_database, no_versions
    from ._watch import DEBOUNCE_MS, FolderWatcher, WatchRun

__getattr__ = lazy_doorway(globals())
