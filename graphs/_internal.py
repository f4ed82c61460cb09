"""What the layers above use of ``kbgraph.graphs`` beyond its face: kbgraph's own
contract between its layers, not public API (it may change in any release; users import
``kbgraph.graphs``). ``tests/unit/test_layers.py`` lets another layer import this layer's
private modules only through here, and reads ``_LAZY`` to see the real edges. Each name
loads its module on first use, as the face does, so a light import stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_attributes

if TYPE_CHECKING:
    from ._chat_models.scripted import (
        ScriptedCall as ScriptedCall,
    )
    from ._chat_models.scripted import (
        ScriptedChatModel as ScriptedChatModel,
    )
    from ._chat_models.scripted import (
        ScriptedRefusalError as ScriptedRefusalError,
    )
    from ._chat_models.scripted import (
        ScriptExhaustedError as ScriptExhaustedError,
    )
    from ._chat_models.scripted import (
        StructuredOutputParseError as StructuredOutputParseError,
    )
    from ._chat_models.scripted import (
        refusal_message as refusal_message,
    )
    from ._chat_models.scripted import (
        tool_call_message as tool_call_message,
    )
    from ._citations import (
        ResolvedCitation as ResolvedCitation,
    )
    from ._citations import (
        UncitedSource as UncitedSource,
    )
    from ._citations import (
        UnresolvedMarker as UnresolvedMarker,
    )
    from ._citations import (
        extract_citations as extract_citations,
    )
    from ._citations import (
        inject_context as inject_context,
    )
    from ._context_window import (
        JSON_RESERVE_TOKENS as JSON_RESERVE_TOKENS,
    )
    from ._context_window import (
        first_lines as first_lines,
    )
    from ._context_window import (
        largest_fitting as largest_fitting,
    )
    from ._extractive import extractive_text as extractive_text
    from ._hosts import LOOPBACK_HOSTS as LOOPBACK_HOSTS
    from ._hosts import host_name as host_name
    from ._hosts import is_ip as is_ip
    from ._http_app import (
        ContextKeysMiddleware as ContextKeysMiddleware,
    )
    from ._loops import quoted as quoted
    from ._loops import repetition as repetition
    from ._models import (
        resolve_chat_model as resolve_chat_model,
    )
    from ._nodes import fit_sources as fit_sources
    from ._nodes import question_of as question_of
    from ._nodes import run_outage as run_outage
    from ._nodes.decide_retrieve import (
        is_small_talk_or_closing as is_small_talk_or_closing,
    )
    from ._nodes.decide_retrieve import (
        small_talk_kind as small_talk_kind,
    )
    from ._nodes.retrieve import (
        one_list as one_list,
    )
    from ._nodes.retrieve import (
        scope_filters as scope_filters,
    )
    from ._recording import (
        RECORDED_EVENT as RECORDED_EVENT,
    )
    from ._recording import (
        list_runs as list_runs,
    )
    from ._recording import (
        message_dict as message_dict,
    )
    from ._recording import (
        read_run as read_run,
    )
    from ._recording import (
        recording as recording,
    )
    from ._recording import (
        runs_dir as runs_dir,
    )
    from ._searcher import (
        SearcherRegistry as SearcherRegistry,
    )
    from ._served_guard import ServedRequestsGuard as ServedRequestsGuard
    from ._settings import (
        FOLDER_ENV as FOLDER_ENV,
    )
    from ._settings import (
        RagSettings as RagSettings,
    )
    from ._settings import (
        ResolvedKnowledgeBase as ResolvedKnowledgeBase,
    )
    from ._settings import (
        knowledge_base_specs as knowledge_base_specs,
    )
    from ._state import (
        RagInput as RagInput,
    )
    from ._state import (
        retrieve_records as retrieve_records,
    )
    from ._structured import (
        INTERNAL as INTERNAL,
    )
    from ._structured import (
        ask_structured as ask_structured,
    )
    from ._structured import (
        describe_error as describe_error,
    )
    from ._subgraph import (
        build_rag_graph as build_rag_graph,
    )
    from ._tool import (
        previous_citations as previous_citations,
    )
    from ._trace import (
        check_lines as check_lines,
    )
    from ._trace import (
        source_lines as source_lines,
    )
    from ._trace import (
        summarize_step as summarize_step,
    )
    from ._trace import (
        trace_lines as trace_lines,
    )
    from ._trace import (
        unresolved_lines as unresolved_lines,
    )
    from ._trace import (
        verdict_lines as verdict_lines,
    )

_LAZY = {
    "ask_structured": "._structured",
    "build_rag_graph": "._subgraph",
    "check_lines": "._trace",
    "ContextKeysMiddleware": "._http_app",
    "LOOPBACK_HOSTS": "._hosts",
    "host_name": "._hosts",
    "is_ip": "._hosts",
    "quoted": "._loops",
    "repetition": "._loops",
    "ServedRequestsGuard": "._served_guard",
    "describe_error": "._structured",
    "extract_citations": "._citations",
    "extractive_text": "._extractive",
    "first_lines": "._context_window",
    "fit_sources": "._nodes",
    "FOLDER_ENV": "._settings",
    "inject_context": "._citations",
    "INTERNAL": "._structured",
    "is_small_talk_or_closing": "._nodes.decide_retrieve",
    "JSON_RESERVE_TOKENS": "._context_window",
    "knowledge_base_specs": "._settings",
    "largest_fitting": "._context_window",
    "list_runs": "._recording",
    "message_dict": "._recording",
    "one_list": "._nodes.retrieve",
    "previous_citations": "._tool",
    "question_of": "._nodes",
    "RagInput": "._state",
    "RagSettings": "._settings",
    "read_run": "._recording",
    "RECORDED_EVENT": "._recording",
    "recording": "._recording",
    "refusal_message": "._chat_models.scripted",
    "resolve_chat_model": "._models",
    "ResolvedCitation": "._citations",
    "ResolvedKnowledgeBase": "._settings",
    "retrieve_records": "._state",
    "run_outage": "._nodes",
    "runs_dir": "._recording",
    "scope_filters": "._nodes.retrieve",
    "ScriptedCall": "._chat_models.scripted",
    "ScriptedChatModel": "._chat_models.scripted",
    "ScriptedRefusalError": "._chat_models.scripted",
    "ScriptExhaustedError": "._chat_models.scripted",
    "SearcherRegistry": "._searcher",
    "small_talk_kind": "._nodes.decide_retrieve",
    "source_lines": "._trace",
    "StructuredOutputParseError": "._chat_models.scripted",
    "summarize_step": "._trace",
    "tool_call_message": "._chat_models.scripted",
    "trace_lines": "._trace",
    "UncitedSource": "._citations",
    "UnresolvedMarker": "._citations",
    "unresolved_lines": "._trace",
    "verdict_lines": "._trace",
}


__getattr__ = lazy_attributes(globals(), _LAZY)
