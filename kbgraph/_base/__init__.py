"""The foundation below the layers: helpers no layer owns, imported directly by every layer (as
LangGraph's ``langgraph._internal``). Words, stems and stop words (``text``), sentence
starts (``sentences``), camelCase JSON (``camel``), the cache folder (``cache``), the
settings base (``validation``), the ``[N]`` citation grammar and its records
(``citations``), the languages of source files (``languages``), loopback hosts (``hosts``),
fitting a prompt into a model's window (``context_window``), the config and error line of
kbgraph's own model calls (``model_calls``), the default-command click group and the
``--index-dir`` option of several layers' commands (``commands``),
when a model's reply loops (``loops``), text shown with its control characters as escapes
(``escapes``) and the scripted chat model (``scripted_chat``: the
double of the chat-model seam every layer above the engine has).

Not public API. A module here imports nothing of kbgraph's but the foundation
(``kbgraph.errors`` and this package): ``tests/unit/test_layers.py`` holds the rule. This
``__init__`` imports nothing, so that one helper loads alone."""
