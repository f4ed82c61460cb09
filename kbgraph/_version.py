"""The package version, importable from every layer without importing the package's
re-exports (``kbgraph/__init__`` imports the layers)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
