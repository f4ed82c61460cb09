"""How the CLI fails: library errors become a one-line reason on stderr and an exit code
that means something (the table is docs/reference/exit-codes.md and the ``kbgraph``
docstring)."""

from __future__ import annotations

import json
import os
import select
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, NoReturn, TypeVar, cast

import click

from kbgraph._base.escapes import printable
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
# 128 + SIGPIPE: what a shell reports for a Unix tool whose reader went away (`| head -1`).
EXIT_STDOUT_CLOSED = 141
# 128 + SIGINT: what a shell reports for a tool stopped with Ctrl-C.
EXIT_INTERRUPTED = 130
INTERRUPTED = (
    "interrupted (Ctrl-C); nothing was lost: an index changes only when a run completes, "
    "so it is as it was before this run; run the command again to finish"
)
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
                click.echo(f"{prefix}: {printable(describe_invalid(exc))}", err=True)
                sys.exit(EXIT_USAGE)
            except KbgraphError as exc:
                code = next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1)
                click.echo(f"{prefix}: {printable(str(exc))}", err=True)
                sys.exit(code)
            except KeyboardInterrupt:
                # click would print "Aborted!" and exit 1, which says neither what became of
                # the index nor that the user stopped it.
                click.echo(f"{prefix}: {INTERRUPTED}", err=True)
                sys.exit(EXIT_INTERRUPTED)
            except (OSError, ValueError) as exc:
                if isinstance(exc, BrokenPipeError) and stdout_closed():
                    end_quietly()  # not a failure: the reader had read enough
                click.echo(f"{prefix}: {type(exc).__name__}: {printable(str(exc))}", err=True)
                sys.exit(1)

        return cast(F, wrapper)

    return decorate


fail_cleanly = failing_as("kbgraph")
"""The engine commands' error handling."""


def stdout_closed() -> bool:
    """Whether the reader of stdout went away (the pipe into ``head -1`` after its line):
    the write end of a pipe nobody reads polls as an error. A BrokenPipeError of another
    pipe (a socket to a provider) is a failure like any other."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real stream (click's test runner)
        return False
    if not hasattr(select, "poll"):  # Windows: no poll; a broken pipe there is stdout's
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(event & (select.POLLERR | select.POLLHUP) for _fd, event in poller.poll(0))


def end_quietly() -> NoReturn:
    """End as a Unix tool whose output pipe closed does: nothing on stderr, exit 141.
    Python flushes stdout again at exit, so stdout is pointed at /dev/null first, else
    that flush fails too ("Exception ignored ... BrokenPipeError"; the recipe of Python's
    ``signal`` documentation, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    sys.exit(EXIT_STDOUT_CLOSED)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


class LiveChoice(click.Choice):
    """A ``click.Choice`` whose choices are read when the command line is parsed, not when
    the command is defined: the search modes of the ranker registry, the metrics of the
    evaluator registry, so that one registered after import is offered too."""

    def __init__(self, choices: Callable[[], Sequence[str]]) -> None:
        self._live = choices
        super().__init__(list(choices()))

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(self._live())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        """click's ``__init__`` sets the choices once; they are read live instead."""


__all__ = [
    "EXIT_CODES",
    "EXIT_INTERRUPTED",
    "EXIT_STDOUT_CLOSED",
    "EXIT_USAGE",
    "INTERRUPTED",
    "LiveChoice",
    "describe_invalid",
    "emit_json",
    "end_quietly",
    "fail_cleanly",
    "failing_as",
    "printable",
    "stdout_closed",
]
