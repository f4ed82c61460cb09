"""The public API of every public module, pinned: a change of any ``__all__`` fails here
until this file says so too (add the name below, in the same commit). A module is public
unless a part of its name starts with ``_``; a public module without ``__all__`` fails.
Every exported name resolves, and every exception any module exports is part of the one
tree under ``KbgraphError``."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from kbgraph.errors import KbgraphError

PUBLIC_API: dict[str, list[str]] = {
    "kbgraph": [
        "ConfigError",
        "KbgraphError",
        "KnowledgeBase",
        "RagSettings",
        "SearchFilters",
        "__version__",
        "build_rag_graph",
        "format_context",
        "rag_search",
    ],
    "kbgraph.agents": [
        "AgentInput",
        "AnswerAction",
        "AnswerAttempt",
        "AnswerCheckMiddleware",
        "AnswerCheckMiddlewareState",
        "AnswerCheckRecord",
        "AnswerKeys",
        "AnswerMode",
        "AnswerVerdict",
        "ChatAgent",
        "ChatAgentState",
        "RagMiddleware",
        "RagMiddlewareState",
        "ToolAgentOutput",
        "ToolAgentState",
        "VERDICT_KEY",
        "answer_check_node",
        "build_chat_agent",
        "build_tool_agent",
        "chat_agent",
        "check_specs",
        "compose_answer",
        "hold_draft",
        "output_from_state",
        "run_ask",
        "tool_agent",
        "verdict_on",
    ],
    "kbgraph.cli": [
        "describe_server",
        "main",
        "parse_weights",
    ],
    "kbgraph.errors": [
        "BaselineMismatchError",
        "ChatModelError",
        "ConfigError",
        "ContextLengthError",
        "DatabaseSetupError",
        "DatabaseTimeoutError",
        "DatabaseUnavailableError",
        "DatasetError",
        "DimensionMismatchError",
        "EmbeddingError",
        "ErrorRecord",
        "EvaluationError",
        "GlobLimitError",
        "IndexCorruptError",
        "IndexLockedError",
        "IndexNotFoundError",
        "IndexUnreadableError",
        "InvalidSettingError",
        "JudgeError",
        "JudgeTimeoutError",
        "KbgraphError",
        "LlmRefusalError",
        "ModelMismatchError",
        "NotServedError",
        "ReadOnlyStoreError",
        "ServerWorkerError",
        "error_from_record",
        "error_record",
        "error_text",
        "error_types",
    ],
    "kbgraph.evals": [
        "Agent",
        "AgentOutput",
        "AnswerCheck",
        "AnswerCorrectnessEvaluator",
        "AnswerRelevanceEvaluator",
        "Claim",
        "ClaimCheck",
        "ClaimDecomposer",
        "ClaimVerdict",
        "Comparison",
        "ContextPrecisionEvaluator",
        "ContextRecallEvaluator",
        "DatasetError",
        "Decomposition",
        "EvalRecord",
        "EvalResults",
        "EvalRow",
        "Evaluator",
        "FaithfulnessEvaluator",
        "FunctionAgent",
        "GoldSource",
        "Judge",
        "JudgeError",
        "Judgement",
        "LLMJudge",
        "MetricEvaluator",
        "MetricResult",
        "OfflineJudge",
        "OverlapJudge",
        "Passage",
        "Relevance",
        "RowResult",
        "TokenUsage",
        "Verdict",
        "arun_dataset",
        "auroc",
        "average_precision",
        "bundled_dataset_path",
        "check_answer",
        "compare_summaries",
        "decompose",
        "default_evaluators",
        "load_dataset",
        "load_summary",
        "metric_names",
        "pairwise_accuracy",
        "passages_from",
        "register_metric",
        "resolve_judge",
        "run_dataset",
        "split_claims",
        "summarize",
        "unregister_metric",
        "write_report",
    ],
    "kbgraph.graphs": [
        "AnswerCheckSettings",
        "AnswerPolicy",
        "CallableReranker",
        "Candidate",
        "ChatGGUF",
        "Citation",
        "CompressorReranker",
        "CrossEncoderReranker",
        "GGUFOptions",
        "KnowledgeBaseSpec",
        "NODE_ORDER",
        "NodeDeps",
        "RagGrounding",
        "RagInput",
        "RagOutput",
        "RagScope",
        "RagSearchArtifact",
        "RagSettings",
        "RagState",
        "RerankMode",
        "Reranker",
        "RetrievalDebug",
        "Searcher",
        "SearcherRegistry",
        "TURN_KEY",
        "TurnMarker",
        "as_reranker",
        "build_rag_graph",
        "default_registry",
        "extract_citations",
        "http_app",
        "inject_context",
        "make_rag_search",
        "mark_answer",
        "marker_of",
        "open_knowledge_base",
        "rag_graph",
        "rag_search",
        "resolve_chat_model",
        "settings_from_context",
        "settings_from_runtime",
        "tool_runtime",
        "turn_marker",
    ],
    "kbgraph.inspector": [
        "InspectedBase",
        "InspectorConfig",
        "RefusedPath",
        "SourceText",
        "allowed_hosts",
        "app",
        "check_relative",
        "create_app",
        "is_loopback",
        "listen",
        "served_url",
        "source_text",
    ],
    "kbgraph.mcp": [
        "MAX_QUERY_CHARS",
        "MAX_READ_LINES",
        "McpSettings",
        "ServedBase",
        "build_server",
        "http_app",
        "serve_http",
        "serve_stdio",
    ],
    "kbgraph.prompts": [
        "load_prompt",
        "placeholders",
        "render_prompt",
    ],
    "kbgraph.retrieval": [
        "Chunk",
        "ChunkConfig",
        "ChunkStrategy",
        "ConfigError",
        "ContextEntry",
        "DimensionMismatchError",
        "EmbeddingError",
        "EmbeddingMeta",
        "FieldRanker",
        "FileRecord",
        "HYBRID",
        "IndexChanges",
        "IndexCorruptError",
        "IndexLockedError",
        "IndexMeta",
        "IndexNotFoundError",
        "IndexReport",
        "IndexStats",
        "IndexStore",
        "IndexWriter",
        "KbgraphError",
        "KnowledgeBase",
        "KnowledgeBaseRetriever",
        "LoadedFile",
        "Loader",
        "ModelMismatchError",
        "Previous",
        "ProgressCallback",
        "ProgressEvent",
        "QueryRanking",
        "Ranker",
        "RankerName",
        "ScanConfig",
        "SearchConfig",
        "SearchFilters",
        "SearchMode",
        "SearchResult",
        "SkippedFile",
        "Snapshot",
        "StoreRanker",
        "VersionInfo",
        "__version__",
        "describe_store",
        "file_kinds",
        "format_context",
        "get_ranker",
        "hybrid_rankers",
        "load_text",
        "open_store",
        "rankers",
        "register_loader",
        "register_ranker",
        "render_context",
        "search_modes",
        "unregister_loader",
        "unregister_ranker",
        "write_file_atomic",
    ],
    "kbgraph.testing": [
        "FakeEmbeddings",
        "ScriptExhaustedError",
        "ScriptedCall",
        "ScriptedChatModel",
        "ScriptedJudge",
        "ScriptedRefusalError",
        "StructuredOutputParseError",
        "refusal_message",
        "tool_call_message",
    ],
}


LAYERS = ("kbgraph.retrieval", "kbgraph.graphs", "kbgraph.evals", "kbgraph.prompts")


def _modules() -> list[str]:
    """Every module of the installed package, private ones included. The layers are walked
    one by one: in an editable install they are not below ``kbgraph.__path__``."""
    found = ["kbgraph"]
    for top in ("kbgraph", *LAYERS):
        package = importlib.import_module(top)
        found.extend(info.name for info in pkgutil.walk_packages(package.__path__, top + "."))
    # kbgraph.__main__ runs the CLI when imported.
    return sorted({*found, *LAYERS} - {"kbgraph.__main__"})


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == PUBLIC_API[package]
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names {name}, which is missing"


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def test_every_public_module_is_pinned() -> None:
    assert {name for name in _modules() if _public(name)} == set(PUBLIC_API)


@pytest.mark.parametrize("name", [m for m in _modules() if _public(m)])
def test_every_public_module_declares_all(name: str) -> None:
    assert isinstance(getattr(importlib.import_module(name), "__all__", None), list)


def test_every_exported_exception_is_under_kbgraph_error() -> None:
    outside = []
    for name in _modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            value = getattr(module, attr)
            exception = isinstance(value, type) and issubclass(value, BaseException)
            if exception and not issubclass(value, KbgraphError):
                outside.append(f"{name}.{attr}")
    assert outside == []
