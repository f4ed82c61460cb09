"""Click pieces the layers' commands share: the group of ``kbgraph eval`` (the evals') and
the same group given the chat agent by the ready agents (``kbgraph.agents._eval``), and
the options that commands of several layers take (``--index-dir``: ``kbgraph index``,
``search`` and the agents' ``ask``)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

index_dir_opt = click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the index lives (default FOLDER/.kbgraph).",
)


class DefaultCommandGroup(click.Group):
    """A group that runs ``default_command`` when the first argument is not one of its
    commands (``kbgraph eval data.jsonl`` = ``kbgraph eval run data.jsonl``). ``lazy``
    maps command names to ``(module, attribute)`` loaded on first use, so that other
    layers can add subcommands without this module importing them."""

    default_command = "run"

    def __init__(
        self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, tuple[str, str]] = dict(lazy or {})

    def _known(self) -> set[str]:
        return {*self.commands, *self.lazy}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self._known() and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._known())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module_name, attr = self.lazy[cmd_name]
            self.add_command(getattr(importlib.import_module(module_name), attr), name=cmd_name)
        return super().get_command(ctx, cmd_name)


__all__ = ["DefaultCommandGroup", "index_dir_opt"]
