"""Test helpers shared by the unit, integration and e2e suites (see ``openai_server``)."""

from .openai_server import (
    CHAT_PATH,
    EMBEDDINGS_PATH,
    MODELS_PATH,
    ChatReply,
    OpenAIServer,
    RecordedRequest,
    ToolCall,
)

__all__ = [
    "CHAT_PATH",
    "EMBEDDINGS_PATH",
    "MODELS_PATH",
    "ChatReply",
    "OpenAIServer",
    "RecordedRequest",
    "ToolCall",
]
