"""Every error kbgraph raises on purpose, in one tree under :class:`KbgraphError`.

Messages say what was wrong, what is allowed and what to do next, because the CLI prints
them as the one-line reason of a failure (``kbgraph: <message>``) and maps the class to an
exit code (``kbgraph._exit_codes.EXIT_CODES``). This module imports nothing of kbgraph's, so
every layer may import it::

    KbgraphError
    ├── ConfigError (ValueError)           a setting, spec, argument or context is not valid
    │   ├── InvalidSettingError            one field of a settings model (which, value, rule)
    │   ├── GlobLimitError                 a glob, or a search filter's globs, too costly
    │   └── DatasetError                   an evaluation data set or baseline cannot be read
    │       └── BaselineMismatchError      a baseline from another data set
    │   └── DatabaseSetupError             the database lacks pgvector or a privilege
    │       └── ReadOnlyStoreError         the store's server is a standby: no writes
    │   └── NotServedError                 a served run names code or a store its server
    │                                      was not started with
    ├── IndexNotFoundError                 the folder has no index yet
    ├── IndexLockedError (TimeoutError)    another process held the index too long
    ├── IndexCorruptError                  an index file failed validation
    ├── IndexUnreadableError               the index folder may not be read (permissions)
    ├── ModelMismatchError                 another embedding model than the index's
    │   └── DimensionMismatchError         vectors of another size
    ├── DatabaseUnavailableError           PostgreSQL did not answer
    │   └── DatabaseTimeoutError (TimeoutError)  a search hit its lock or statement timeout
    ├── EmbeddingError                     the embedding provider kept failing
    ├── ChatModelError                     the chat model gave no usable reply
    │   ├── LlmRefusalError                it refused
    │   └── ContextLengthError             the prompt does not fit its context window
    └── EvaluationError                    an evaluation could not be run
        └── JudgeError                     a judge gave no verdict
            └── JudgeTimeoutError (TimeoutError)  not within a row's time limit

A failure that a run keeps going past (a knowledge base that could not be searched) is
recorded in the state as data, an :class:`ErrorRecord` (``{where, type, message}``, JSON for
checkpoints and LangGraph Studio), and turned back into its class by
:func:`error_from_record`, which looks the type up in this tree (:func:`error_types`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict


class KbgraphError(Exception):
    """Base of every error kbgraph raises on purpose."""


class ConfigError(KbgraphError, ValueError):
    """A setting or spec is not valid (bad embedding spec, chunk size, mode, context key,
    knowledge base shape ...)."""


class InvalidSettingError(ConfigError):
    """One value of a settings model is not allowed. ``setting`` is its dotted path
    (``search.top_k``), ``value`` what was given, ``rule`` what is allowed and ``default``
    the field's default (or ``None``), so that the CLI can name its own option instead."""

    def __init__(
        self, message: str, *, setting: str, value: object, rule: str, default: object = None
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.value = value
        self.rule = rule
        self.default = default


class GlobLimitError(ConfigError):
    """A glob past the limits on its length or wildcards, or the paths of one search
    filter past those on their number, characters or wildcards together
    (:mod:`kbgraph.retrieval._globs`): matching them would cost more than a search may."""


class DatasetError(ConfigError):
    """A data-set file is missing or one of its lines is not a valid row."""


class BaselineMismatchError(DatasetError):
    """The baseline summary comes from another data set (or another ``--limit``): its means
    cannot be compared with this run's."""


class DatabaseSetupError(ConfigError):
    """The database of a PostgreSQL store cannot hold an index as it is: no pgvector, or
    the user lacks a privilege (to create the extension, the tables, or to read them)."""


class ReadOnlyStoreError(DatabaseSetupError):
    """A PostgreSQL store's URL reaches a standby (a read-only replica) where an index run
    must write: searches work there, writes go to the primary."""


class NotServedError(ConfigError):
    """A run of a served graph (``langgraph dev`` with kbgraph's app) names a retriever to
    import or a store to connect to that the server was not started with: a request may
    use only what the server's own configuration allows (see
    :mod:`kbgraph.graphs._served`)."""


class DatabaseUnavailableError(KbgraphError):
    """A PostgreSQL store's server could not be reached (or the connection was lost)."""


class DatabaseTimeoutError(DatabaseUnavailableError, TimeoutError):
    """A PostgreSQL search gave up: a table it needs stayed locked past the lock timeout, or
    the statement ran past the statement timeout (``KBGRAPH_PG_LOCK_TIMEOUT_MS``,
    ``KBGRAPH_PG_STATEMENT_TIMEOUT_MS``)."""


class IndexNotFoundError(KbgraphError):
    """The folder has no index yet."""


class IndexLockedError(KbgraphError, TimeoutError):
    """Another process held the index lock for longer than the timeout."""


class IndexCorruptError(KbgraphError):
    """An index file failed validation (bad magic, version, length or content)."""


class IndexUnreadableError(KbgraphError):
    """The index folder exists but this user may not read it (its permissions): not damage
    that an index run could repair, so the message says what access to give."""


class ModelMismatchError(KbgraphError):
    """The embedding model in use is not the one the index was built with (another
    provider or model name, or vectors of another size)."""


class DimensionMismatchError(ModelMismatchError):
    """The embedding model gives vectors of another size than the existing index."""


class ServerWorkerError(KbgraphError):
    """A worker process of ``kbgraph mcp --http --workers N`` ended without being asked to
    (it crashed, or was killed): the server stops its other workers and fails."""


class EmbeddingError(KbgraphError):
    """The embedding provider failed after retries."""


class ChatModelError(KbgraphError):
    """A chat model gave no usable reply (after its structured-output and JSON paths)."""


class LlmRefusalError(ChatModelError, ValueError):
    """The model refused to answer."""


class ContextLengthError(ChatModelError):
    """The prompt is longer than the model's context window holds (``prompt_tokens`` >
    ``limit``; 0 where the model did not say)."""

    def __init__(self, message: str, *, prompt_tokens: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class EvaluationError(KbgraphError):
    """An evaluation could not be run."""


class JudgeError(EvaluationError):
    """A judge could not give a verdict (an LLM that keeps failing or replying nonsense)."""


class JudgeTimeoutError(JudgeError, TimeoutError):
    """A judge had not finished when its row's time (``--row-timeout``) ran out."""


class ErrorRecord(TypedDict):
    """An exception as data: ``type`` is its class name (module-qualified outside this tree
    and the builtins, so that another library's ``ConfigError`` is never taken for ours),
    ``message`` its text, ``where`` what failed (``index``, a ranked list such as
    ``docs/q0/bm25``, or ``""`` for the whole step)."""

    where: str
    type: str
    message: str


def error_record(exc: BaseException, where: str = "") -> ErrorRecord:
    """``exc`` as an :class:`ErrorRecord`."""
    kind = type(exc)
    inside = issubclass(kind, KbgraphError) or kind.__module__ == "builtins"
    name = kind.__name__ if inside else f"{kind.__module__}.{kind.__qualname__}"
    return {"where": where, "type": name, "message": str(exc)}


def error_types() -> dict[str, type[KbgraphError]]:
    """Every class of the tree by its name, read from the tree itself (subclasses defined
    elsewhere included); on a name used twice, the class nearer the root wins."""
    found: dict[str, type[KbgraphError]] = {}
    level: list[type[KbgraphError]] = [KbgraphError]
    while level:
        for kind in level:
            found.setdefault(kind.__name__, kind)
        level = [sub for kind in level for sub in kind.__subclasses__()]
    return found


def error_text(record: ErrorRecord | Mapping[str, object] | str) -> str:
    """A record as one line of text, ``where: Type: message`` (what runs recorded before
    errors were data, a plain string, comes back as it is)."""
    if isinstance(record, str):
        return record
    text = f"{record.get('type') or 'Error'}: {record.get('message', '')}"
    return f"{record['where']}: {text}" if record.get("where") else text


def error_from_record(
    record: ErrorRecord | Mapping[str, object] | str, prefix: str = ""
) -> KbgraphError:
    """The error a record describes, as its class with ``prefix`` + its message; a class
    that needs more than a message gives its nearest base that does (an
    ``InvalidSettingError`` a ``ConfigError``). A type outside the tree (an ``OSError``,
    another library's error) or a record in text gives a ``KbgraphError`` with the whole
    record as its text."""
    kind = None if isinstance(record, str) else error_types().get(str(record.get("type")))
    if kind is None or isinstance(record, str):
        return KbgraphError(prefix + error_text(record))
    message = prefix + str(record.get("message", ""))
    for base in kind.__mro__:
        if isinstance(base, type) and issubclass(base, KbgraphError):
            try:
                return base(message)
            # A class built from more than a message fails in its own way (a TypeError for a
            # missing argument, an AttributeError on a string where it wants an object).
            except Exception:
                continue
    return KbgraphError(prefix + error_text(record))  # pragma: no cover - the base takes one


__all__ = [
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
]
