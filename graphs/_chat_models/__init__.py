"""Chat models kbgraph runs itself (the hosted ones come from their LangChain packages).

``ChatGGUF`` runs a GGUF file in process through llama.cpp (``pip install 'kbgraph[gguf]'``),
with structured output and tool calling held to their schemas by llama.cpp's grammar; the
spec ``gguf:<path>[?threads=1&n_ctx=4096&max_tokens=512]`` names one.
``ScriptedChatModel`` replies from a script (the ``fake`` spec; ``kbgraph.testing``): it
stands in for the chat-model seam of every layer above the engine, so it lives in the
foundation (``kbgraph._base.scripted_chat``); it is named here for the 0.1 module name
``kbgraph.graphs.chat_models`` (``kbgraph._moved``).
"""

from __future__ import annotations

from kbgraph._base.scripted_chat import ScriptedChatModel

from ._gguf_spec import GGUFOptions, parse_gguf_spec
from ._llamacpp import check_runtime_installed
from .gguf import ChatGGUF

__all__ = [
    "ChatGGUF",
    "GGUFOptions",
    "ScriptedChatModel",
    "check_runtime_installed",
    "parse_gguf_spec",
]
