"""How the CLI fails: library errors become a one-line reason on stderr and an exit code
that means something (the table is in the README and the ``kbgraph`` docstring)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

import click

from kbgraph.errors import (
    ConfigError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    InvalidSettingError,
    KbgraphError,
    ModelMismatchError,
)

EXIT_USAGE = 2
EXIT_CODES: dict[type[Exception], int] = {
    ConfigError: EXIT_USAGE,
    IndexNotFoundError: 3,
    IndexLockedError: 4,
    IndexCorruptError: 5,
    ModelMismatchError: 7,  # 6 is `kbgraph eval`'s regression gate
}
F = TypeVar("F", bound=Callable[..., Any])
# The option of each settings field whose name is not simply the field's with dashes.
_OPTION_OF = {
    "max_file_bytes": "--max-file-size",
    "score_threshold": "--threshold",
    "weights": "--weight",
}


def describe_invalid(exc: InvalidSettingError) -> str:
    """The settings model's one-line refusal, naming the command-line option that set the
    value rather than the settings field."""
    field = exc.setting.rsplit(".", 1)[-1]
    option = _OPTION_OF.get(field, "--" + field.replace("_", "-"))
    example = f", e.g. {option} {exc.default} (the default)" if isinstance(exc.default, int) else ""
    return f"{option} {exc.value} is not allowed ({exc.rule}); pass an allowed value{example}"


def failing_as(prefix: str) -> Callable[[F], F]:
    """A decorator that turns library errors into ``<prefix>: <reason>`` on stderr and a
    meaningful exit code (one per command group, so each names itself)."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except InvalidSettingError as exc:  # a bad option value
                click.echo(f"{prefix}: {describe_invalid(exc)}", err=True)
                sys.exit(EXIT_USAGE)
            except KbgraphError as exc:
                code = next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1)
                click.echo(f"{prefix}: {exc}", err=True)
                sys.exit(code)
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
