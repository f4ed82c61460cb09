"""Every error kbgraph raises on purpose, in one tree under :class:`KbgraphError`.

Messages say what was wrong, what is allowed and what to do next, because the CLI prints
them as the one-line reason of a failure (``kbgraph: <message>``) and maps the class to an
exit code (``kbgraph.exit_codes.EXIT_CODES``). This module imports nothing of kbgraph's, so
every layer may import it::

    KbgraphError
    ├── ConfigError (ValueError)           a setting, spec, argument or context is not valid
    │   ├── InvalidSettingError            one field of a settings model (which, value, rule)
    │   └── DatasetError                   an evaluation data set or baseline cannot be read
    │       └── BaselineMismatchError      a baseline from another data set
    │   └── DatabaseSetupError             the database lacks pgvector or a privilege
    │       └── ReadOnlyStoreError         the store's server is a standby: no writes
    ├── IndexNotFoundError                 the folder has no index yet
    ├── IndexLockedError (TimeoutError)    another process held the index too long
    ├── IndexCorruptError                  an index file failed validation
    ├── IndexUnreadableError               the index folder may not be read (permissions)
    ├── ModelMismatchError                 another embedding model than the index's
    │   └── DimensionMismatchError         vectors of another size
    ├── DatabaseUnavailableError           PostgreSQL did not answer
    ├── EmbeddingError                     the embedding provider kept failing
    ├── ChatModelError                     the chat model gave no usable reply
    │   ├── LlmRefusalError                it refused
    │   └── ContextLengthError             the prompt does not fit its context window
    └── EvaluationError                    an evaluation could not be run
        └── JudgeError                     a judge gave no verdict
            └── JudgeTimeoutError (TimeoutError)  not within a row's time limit
"""

from __future__ import annotations


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


class DatabaseUnavailableError(KbgraphError):
    """A PostgreSQL store's server could not be reached (or the connection was lost)."""


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


__all__ = [
    "BaselineMismatchError",
    "ChatModelError",
    "ConfigError",
    "ContextLengthError",
    "DatabaseSetupError",
    "DatabaseUnavailableError",
    "DatasetError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EvaluationError",
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
    "ReadOnlyStoreError",
]
