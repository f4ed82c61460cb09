"""What ``kbgraph COMMAND --help`` tells a new user: every option says what it does, and the
usage line agrees with the description. Walks every command, the lazily loaded ones too."""

from __future__ import annotations

from collections.abc import Iterator

import click
from click.testing import CliRunner

from kbgraph.cli import main


def _commands(command: click.Command, ctx: click.Context) -> Iterator[click.Context]:
    yield ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from _commands(sub, click.Context(sub, parent=ctx, info_name=name))


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--help"], prog_name="kbgraph")
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_every_option_of_every_command_has_help() -> None:
    """Regression: search's --top-k and --rrf-k, eval run's --tolerance and --out, ask's
    --top-k and eval meta's --embedding and --json showed no help."""
    silent = [
        f"{ctx.command_path} {param.opts[0]}"
        for ctx in _commands(main, click.Context(main, info_name="kbgraph"))
        for param in ctx.command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert silent == []


def test_the_embedding_help_gives_the_default_of_a_new_and_of_an_existing_index() -> None:
    """Regression: "local is the packaged model. Default: what the index was built with."
    left out what a new index gets."""
    shown = _help("index")
    assert "for an existing index, the model it was built with; for a new one, local" in shown


def test_mcp_usage_and_description_both_name_folders() -> None:
    """Regression: the usage said FOLDERS... and the description "FOLDER's knowledge base"."""
    shown = _help("mcp")
    assert "Usage: kbgraph mcp [OPTIONS] FOLDERS..." in shown
    assert "FOLDER's" not in shown and "knowledge bases of FOLDERS" in shown


def test_eval_help_says_a_dataset_may_come_first() -> None:
    """Regression: the usage listed only COMMAND (meta, retrieval, run), though
    `kbgraph eval DATASET` runs `eval run`."""
    shown = _help("eval")
    assert "Usage: kbgraph eval [OPTIONS] DATASET|COMMAND [ARGS]..." in shown
    assert "`kbgraph eval DATASET ...` is `kbgraph eval run DATASET ...`" in shown
