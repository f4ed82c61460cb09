"""``KnowledgeBase``'s arguments checked at the door: a value of the wrong type is a
``ConfigError`` saying what was given, what is allowed and an example, not a ``TypeError``
deep in ``pathlib`` or a bool taken for a number later."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from kbgraph.errors import ConfigError

from .config import ChunkConfig, ScanConfig

_Settings = TypeVar("_Settings", ChunkConfig, ScanConfig)


def _given(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def path_argument(value: object, name: str, example: str) -> Path:
    """A ``str`` or ``os.PathLike`` (``pathlib.Path``) naming a path, ``~`` expanded."""
    if isinstance(value, str | os.PathLike):
        raw = os.fspath(value)
        if isinstance(raw, str) and raw.strip():
            return Path(raw).expanduser()
    raise ConfigError(
        f"{name} must be the path of a folder (a non-empty str or a pathlib.Path), got "
        f"{_given(value)}; e.g. {example}"
    )


def seconds(value: object, name: str, example: float, *, zero: bool = False) -> float:
    """A finite number of seconds, above 0 (or at least 0 with ``zero``), not a bool."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and (number >= 0 if zero else number > 0) and number < 1e6:
            return number
    bound = "0 or more" if zero else "above 0"
    raise ConfigError(
        f"{name} must be a number of seconds {bound} (got {_given(value)}); e.g. {name}={example:g}"
    )


def whole_number(value: object, name: str) -> int | None:
    """``None`` or an ``int`` (a bool is not a number of anything here)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ConfigError(f"{name} must be a whole number or None, got {_given(value)}; e.g. 3")


def flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{name} must be True or False, got {_given(value)}")


def store_url(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(
        f"store must be None (the folder index), 'folder' or a PostgreSQL URL "
        f"(postgresql://user@host:5432/dbname) as a str, got {type(value).__name__}"
    )


def settings_argument(cls: type[_Settings], value: object, name: str) -> _Settings | None:
    """``None``, a ``cls``, or a dict of its fields (validated: ``ConfigError`` naming the
    setting)."""
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls.model_validate(dict(value))
    fields = ", ".join(cls.model_fields)
    raise ConfigError(
        f"{name} must be a {cls.__name__} (or a dict of its fields: {fields}) or None, got "
        f"{type(value).__name__}; e.g. {name}={cls.__name__}()"
    )


def version_argument(version: object) -> str:
    """``restore``'s version: a row number of ``versions()`` or a generation's name (or a
    unique prefix of one), as the store resolves it."""
    if isinstance(version, bool) or not isinstance(version, str | int):
        raise ConfigError(
            f"version must be a row number of versions() (1 = newest), a generation name "
            f"or a unique prefix of one, got {_given(version)}; e.g. "
            "kb.restore(1) or kb.restore('gen-18a7')"
        )
    return str(version)


__all__ = [
    "flag",
    "path_argument",
    "seconds",
    "settings_argument",
    "store_url",
    "version_argument",
    "whole_number",
]
