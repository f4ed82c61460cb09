"""What the layers above use of ``kbgraph.graphs`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.graphs``). A name the face exports is imported from the face, and a helper no
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
    from ._extractive import extractive_text
    from ._http_app import ContextKeysMiddleware
    from ._nodes import fit_sources, question_of, run_outage
    from ._nodes.decide_retrieve import is_small_talk_or_closing, small_talk_kind
    from ._nodes.retrieve import one_list, scope_filters
    from ._recording import RECORDED_EVENT, list_runs, message_dict, read_run, recording, runs_dir
    from ._served_guard import ServedRequestsGuard
    from ._settings import FOLDER_ENV, ResolvedKnowledgeBase, knowledge_base_specs
    from ._state import retrieve_records
    from ._structured import ask_structured
    from ._tool import previous_citations

__getattr__ = lazy_doorway(globals())
