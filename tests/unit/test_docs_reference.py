"""The reference pages generated from the code (docs/_ext/kbgraph_docs.py) leave nothing
out: every CLI command and option (the lazily loaded commands included), every error type
of ``kbgraph.errors``, every field of every settings model; and llms.txt's sections are
the home page's navigation."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import click
import pytest

import kbgraph.errors as errors
from kbgraph.cli import main
from tests.support.docs_pages import ROOT


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "kbgraph_docs", ROOT / "docs" / "_ext" / "kbgraph_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("kbgraph_docs", module)
    spec.loader.exec_module(module)
    return module


def _commands(cmd: click.Command, ctx: click.Context) -> list[tuple[click.Command, click.Context]]:
    found = [(cmd, ctx)]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            assert sub is not None
            found += _commands(sub, click.Context(sub, info_name=name, parent=ctx))
    return found


def test_the_cli_page_has_every_command_and_option(gen: ModuleType) -> None:
    page = gen.cli_page()
    commands = _commands(main, click.Context(main, info_name="kbgraph"))
    assert len(commands) >= 14  # index ... restore, eval run / meta / retrieval
    for cmd, ctx in commands:
        assert f"`{ctx.command_path}`" in page
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                assert f"`{record[0]}`" in page, (ctx.command_path, record[0])


def test_the_errors_page_has_every_error_type(gen: ModuleType) -> None:
    page = gen.errors_page()
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert f"**`{name}`**" in page, name
        else:  # a record or a helper: named, linked to the API page
            assert f"`kbgraph.errors.{name}`" in page, name


def test_the_settings_page_has_every_field(gen: ModuleType) -> None:
    page = gen.settings_page()
    from kbgraph.graphs import RagSettings
    from kbgraph.retrieval import ChunkConfig, ScanConfig, SearchConfig

    for model in (RagSettings, SearchConfig, ChunkConfig, ScanConfig):
        assert f"## `{model.__name__}`" in page
        for field in model.model_fields:
            assert f"| `{field}` |" in page, (model.__name__, field)


def test_llms_txt_sections_are_the_navigation(gen: ModuleType) -> None:
    sections = gen.nav_sections((ROOT / "docs" / "index.md").read_text(encoding="utf-8"))
    assert [caption for caption, _ in sections][:4] == [
        "Tutorials", "How-to guides", "Reference", "Explanation",
    ]  # fmt: skip
    for _, docs in sections:
        assert all((ROOT / "docs" / f"{doc}.md").exists() or "generated" in doc for doc in docs)
