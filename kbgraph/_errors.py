"""How the CLI fails: library errors become a one-line reason on stderr and an exit code
that means something (the table is in the README and the ``kbgraph`` docstring)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

import click
from pydantic import BaseModel, ValidationError

from kbgraph.errors import (
    ConfigError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    KbgraphError,
    ModelMismatchError,
)
from kbgraph.retrieval.config import ChunkConfig, ScanConfig, SearchConfig

EXIT_USAGE = 2
EXIT_CODES: dict[type[Exception], int] = {
    ConfigError: EXIT_USAGE,
    IndexNotFoundError: 3,
    IndexLockedError: 4,
    IndexCorruptError: 5,
    ModelMismatchError: 7,  # 6 is `kbgraph eval`'s regression gate
}
F = TypeVar("F", bound=Callable[..., Any])
# The settings models the options fill in, and the option of each field whose name is not
# simply the field's with dashes.
_SETTINGS: dict[str, type[BaseModel]] = {
    m.__name__: m for m in (ChunkConfig, ScanConfig, SearchConfig)
}
_OPTION_OF = {
    "max_file_bytes": "--max-file-size",
    "score_threshold": "--threshold",
    "weights": "--weight",
    "include": "--include",
    "exclude": "--exclude",
}
_BOUNDS = {"ge": "at least {}", "gt": "more than {}", "le": "at most {}", "lt": "less than {}"}


def describe_invalid(exc: ValidationError) -> str:
    """One line for the first invalid value: the option, what it got, what is allowed and
    what to pass instead (pydantic's own report spans several lines per error)."""
    error = exc.errors()[0]
    field = str(error["loc"][0]) if error["loc"] else ""
    option = _OPTION_OF.get(field, "--" + field.replace("_", "-"))
    ctx = error.get("ctx") or {}
    allowed = [text.format(ctx[key]) for key, text in _BOUNDS.items() if key in ctx]
    if "expected" in ctx:
        allowed.append(str(ctx["expected"]))
    rule = " and ".join(allowed) or str(error["msg"])
    model = _SETTINGS.get(exc.title)
    fields = model.model_fields if model else {}
    default = fields[field].default if field in fields else None
    example = f", e.g. {option} {default} (the default)" if isinstance(default, int) else ""
    value = error.get("input")
    return f"{option} {value} is not allowed ({rule}); pass an allowed value{example}"


def failing_as(prefix: str) -> Callable[[F], F]:
    """A decorator that turns library errors into ``<prefix>: <reason>`` on stderr and a
    meaningful exit code (one per command group, so each names itself)."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except KbgraphError as exc:
                code = next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1)
                click.echo(f"{prefix}: {exc}", err=True)
                sys.exit(code)
            except ValidationError as exc:  # a bad option value, caught by settings models
                click.echo(f"{prefix}: {describe_invalid(exc)}", err=True)
                sys.exit(EXIT_USAGE)
            except (OSError, ValueError) as exc:
                click.echo(f"{prefix}: {type(exc).__name__}: {exc}", err=True)
                sys.exit(1)

        return cast(F, wrapper)

    return decorate


fail_cleanly = failing_as("kbgraph")
"""The engine commands' error handling."""


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


__all__ = [
    "EXIT_CODES",
    "EXIT_USAGE",
    "describe_invalid",
    "emit_json",
    "fail_cleanly",
    "failing_as",
]
