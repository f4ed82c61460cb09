"""The foundation below the layers: helpers no layer owns, imported directly by every layer
(as LangGraph's ``langgraph._internal``). Words, stems and stop words (``text``), sentence
boundaries, camelCase JSON (``camel``), the cache folder (``cache``), the settings base
(``validation``), the ``[N]`` citation grammar (``citations``), the languages of source
files (``languages``) and loopback hosts (``hosts``).

Not public API. A module here imports nothing of kbgraph's but the foundation
(``kbgraph.errors`` and this package): ``tests/unit/test_layers.py`` holds the rule. This
``__init__`` imports nothing, so that one helper loads alone."""
