"""The doorway of ``kbgraph.graphs``: the subgraph's pieces the ready agents and the
application build on (its nodes' helpers, recorded runs, structured output, the HTTP app's
guards). Not public API; what every doorway holds to: ``tests/unit/test_doorways.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

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

__getattr__ = lazy_imports(globals())
