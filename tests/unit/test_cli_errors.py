"""Every command group fails the same way: ``<prefix>: <reason>`` on stderr, one exit code
per kind of error."""

from __future__ import annotations

import pytest

from kbgraph._exit_codes import failing_as
from kbgraph.errors import (
    ConfigError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    InvalidSettingError,
    KbgraphError,
    ModelMismatchError,
)
from kbgraph.retrieval._config import ChunkConfig


def _invalid_chunking() -> InvalidSettingError:
    try:
        ChunkConfig.model_validate({"chunk_size": 5})
    except InvalidSettingError as exc:
        return exc
    raise AssertionError("a chunk size of 5 must be refused")


@pytest.mark.parametrize(
    ("error", "code", "says"),
    [
        (ConfigError("fusion is 'x'; allowed: rrf, convex"), 2, "fusion is 'x'"),
        (IndexNotFoundError("no index in café/"), 3, "no index in café/"),
        (IndexLockedError("locked"), 4, "locked"),
        (IndexCorruptError("corrupt"), 5, "corrupt"),
        (ModelMismatchError("another model"), 7, "another model"),
        (KbgraphError("anything else"), 1, "anything else"),
        (OSError("disk full"), 1, "OSError: disk full"),
        # Another pipe than stdout (a socket to a provider) broke: a failure, not `| head`.
        (BrokenPipeError(32, "Broken pipe"), 1, "BrokenPipeError: [Errno 32] Broken pipe"),
        (_invalid_chunking(), 2, "--chunk-size 5 is not allowed (at least 16)"),
    ],
)
def test_errors_become_a_line_and_an_exit_code(
    error: Exception, code: int, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    @failing_as("kbgraph eval")
    def command() -> None:
        raise error

    with pytest.raises(SystemExit) as exit_info:
        command()
    assert exit_info.value.code == code
    err = capsys.readouterr().err
    assert err.startswith("kbgraph eval: ") and says in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["search", "no-such-folder-é", "x"], "Invalid value for 'FOLDER'"),
        (["search", ".", "x", "--mode", "bogus"], "'bogus' is not one of"),
        (["search", ".", "x", "--top-k", "0"], "0 is not in the range"),
        (["ask", "."], "Missing argument 'QUESTION'"),
        (["eval", "meta", "--limit", "1"], "1 is not in the range"),
        (["versions", ".", "--stor", "x"], "No such option '--stor'"),
        (["nosuch"], "No such command 'nosuch'"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], says: str) -> None:
    """Regression: Click's usage errors were a three-line block (usage, hint, error)."""
    from click.testing import CliRunner

    from kbgraph.cli import main

    result = CliRunner().invoke(main, args, prog_name="kbgraph")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbgraph: ") and says in lines[0]
    assert "--help`" in lines[0]


def test_a_bare_kbgraph_still_shows_the_help() -> None:
    from click.testing import CliRunner

    from kbgraph.cli import main

    result = CliRunner().invoke(main, [], prog_name="kbgraph")
    assert "Usage: kbgraph" in result.output and "Commands:" in result.output
