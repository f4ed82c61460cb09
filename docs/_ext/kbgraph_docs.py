"""The docs build's own extension: reference pages generated from the code, and llms.txt.

Before Sphinx reads the sources (``builder-inited``) it writes ``reference/generated/``:
the CLI from its click command tree (every command, argument and option, as ``--help``
prints them), the settings models from their pydantic fields, and the error types from
the ``KbgraphError`` tree with their exit codes. Generated, never edited by hand, and
git-ignored: a page can never disagree with the code it describes.

After the build (``build-finished``) it copies each page's Markdown source beside its HTML
(``tutorials/index-and-ask.md``) and writes ``llms.txt`` (https://llmstxt.org): the site's
title and summary, then one Markdown link per page, grouped by the sections of the
navigation, so an agent reads the docs as Markdown.
"""

from __future__ import annotations

import inspect
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from sphinx.application import Sphinx

GENERATED = "reference/generated"
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def rst_to_md(text: str) -> str:
    """A docstring's inline RST as Markdown: ``x`` → `x`, :class:`~a.B` → `B`."""
    text = inspect.cleandoc(text)
    text = _ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)
    return text.replace("``", "`")


def escape_md(text: str) -> str:
    """Markdown-escape what lies outside code spans (``<path>`` would be read as HTML)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([<>*\[\]|])", r"\\\1", parts[i])
    return "`".join(parts)


# ---- the CLI ---------------------------------------------------------------------------


def _command_md(cmd: click.Command, ctx: click.Context, level: int) -> list[str]:
    path = ctx.command_path
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out = [f"{'#' * level} `{path}`", "", "```text", f"{path} {usage}", "```", ""]
    if cmd.help:
        out += [escape_md(inspect.cleandoc(cmd.help).split("\f")[0]), ""]
    args = [p for p in cmd.get_params(ctx) if isinstance(p, click.Argument)]
    if args:
        out += ["**Arguments:** " + ", ".join(f"`{a.make_metavar(ctx)}`" for a in args), ""]
    records = [
        rec
        for p in cmd.get_params(ctx)
        if isinstance(p, click.Option) and (rec := p.get_help_record(ctx)) is not None
    ]
    if records:
        out += ["**Options:**", ""]
        out += [f"- `{opts}`: {escape_md(' '.join(help_.split()))}" for opts, help_ in records]
        out.append("")
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                sub_ctx = click.Context(sub, info_name=name, parent=ctx)
                out += _command_md(sub, sub_ctx, min(level + 1, 4))
    return out


def cli_page() -> str:
    from kbgraph.cli import main

    ctx = click.Context(main, info_name="kbgraph")
    lines = [
        "# Command line (`kbgraph`)",
        "",
        "Generated from the click command tree by `docs/_ext/kbgraph_docs.py`: every",
        "command, argument and option, as `--help` prints them. What each exit code means",
        "is in [Exit codes](../exit-codes.md).",
        "",
    ]
    return "\n".join(lines + _command_md(main, ctx, 2)) + "\n"


# ---- settings models -------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else repr(annotation)
    text = re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Za-z_]\w*)", r"\1", text)
    return text.replace("typing.", "").replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        if isinstance(value, BaseModel):
            return f"`{type(value).__name__}()`"
        return f"`{value!r}`"
    if field.is_required():
        return "required"
    return f"`{field.default!r}`"


def _constraints(field: Any) -> str:
    found = []
    for meta in field.metadata:
        for key in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            if (value := getattr(meta, key, None)) is not None:
                found.append(f"{key} {value}")
    return ", ".join(found)


def _rows(model: type) -> list[list[str]]:
    """(field, type, default, bounds, about) of a pydantic model or a TypedDict."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [
            [f"`{n}`", f"`{_type_name(f.annotation)}`", _default(f), _constraints(f),
             escape_md(f.description or "")]
            for n, f in model.model_fields.items()
        ]  # fmt: skip
    required: frozenset[str] = getattr(model, "__required_keys__", frozenset())
    hints = typing.get_type_hints(model)
    return [
        [f"`{n}`", f"`{_type_name(t)}`", "required" if n in required else "optional", "", ""]
        for n, t in hints.items()
    ]


def model_section(model: type) -> list[str]:
    out = [f"## `{model.__name__}`", ""]
    if model.__doc__:
        out += [rst_to_md(model.__doc__), ""]
    out += ["| field | type | default | bounds | about |", "|---|---|---|---|---|"]
    for row in _rows(model):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return [*out, ""]


def settings_models() -> list[type]:
    """Every settings model the public faces export (a strict pydantic model: unknown keys
    forbidden), RagSettings and its knowledge base spec (a TypedDict) first."""
    import importlib

    from kbgraph.graphs import KnowledgeBaseSpec, RagSettings

    found: list[type] = [RagSettings, KnowledgeBaseSpec]
    for face in ("kbgraph.graphs", "kbgraph.retrieval", "kbgraph.evals"):
        module = importlib.import_module(face)
        for name in module.__all__:
            obj = getattr(module, name)
            strict = isinstance(obj, type) and issubclass(obj, BaseModel)
            if strict and obj.model_config.get("extra") == "forbid" and obj not in found:
                found.append(obj)
    return found


def settings_page() -> str:
    lines = [
        "# Settings models",
        "",
        "Generated from the pydantic models by `docs/_ext/kbgraph_docs.py`. Every model is",
        "strict and frozen: an unknown key or a value of the wrong type is one `ConfigError`",
        "saying what is allowed. `RagSettings` is the subgraph's `context_schema`; the engine's",
        "`SearchConfig`, `ChunkConfig` and `ScanConfig` sit under its `search` and `chunking`",
        "and are what `KnowledgeBase` takes.",
        "",
    ]
    for model in settings_models():
        lines += model_section(model)
    return "\n".join(lines)


# ---- error types -----------------------------------------------------------------------


def errors_page() -> str:
    import kbgraph.errors as errors
    from kbgraph._exit_codes import EXIT_CODES

    names = [
        n
        for n in errors.__all__
        if isinstance(getattr(errors, n), type) and issubclass(getattr(errors, n), BaseException)
    ]
    classes = {getattr(errors, n) for n in names}
    lines = [
        "# Error types",
        "",
        "Generated from `kbgraph.errors` by `docs/_ext/kbgraph_docs.py`. Every error kbgraph",
        "raises is a `KbgraphError`; catch that to catch them all. The exit code is what the",
        "command line exits with for it (every other `KbgraphError` exits 1); see",
        "[Exit codes](../exit-codes.md).",
        "",
    ]

    def walk(cls: type[BaseException], depth: int) -> None:
        code = next((c for k, c in EXIT_CODES.items() if issubclass(cls, k)), 1)
        bases = ", ".join(f"`{b.__name__}`" for b in cls.__bases__)
        doc = rst_to_md(cls.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        lines.append(f"{'  ' * depth}- **`{cls.__name__}`** ({bases}; exit {code}): {doc}")
        for sub in sorted(cls.__subclasses__(), key=lambda c: c.__name__):
            if sub in classes:
                walk(sub, depth + 1)

    walk(errors.KbgraphError, 0)
    others = [n for n in errors.__all__ if getattr(errors, n) not in classes]
    if others:
        listed = ", ".join(f"{{py:obj}}`kbgraph.errors.{n}`" for n in others)
        lines += ["", f"Also in `kbgraph.errors` (see its [API page](api/errors.md)): {listed}."]
    return "\n".join(lines) + "\n"


# ---- the Python API of the public faces ------------------------------------------------

FACES = ("kbgraph.errors", "kbgraph.retrieval", "kbgraph.graphs", "kbgraph.evals",
         "kbgraph.agents", "kbgraph.mcp", "kbgraph.inspector", "kbgraph.testing",
         "kbgraph")  # fmt: skip
FACE_PAGES = ("retrieval", "graphs", "evals", "agents", "mcp", "inspector", "testing", "errors")


def home_face(name: str, obj: object) -> str:
    """The face a name is documented on: the first of FACES (errors first: the engine
    re-exports its errors) that exports this very object under this name."""
    import importlib

    for face in FACES:
        module = importlib.import_module(face)
        if name in module.__all__ and getattr(module, name) is obj:
            return face
    raise LookupError(name)


def _directive(face: str, name: str, obj: object) -> str:
    if inspect.isclass(obj):
        return f".. autoclass:: {face}.{name}"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return f".. autofunction:: {face}.{name}"
    return f".. autodata:: {face}.{name}\n   :no-value:"


def api_page(face: str) -> str:
    """One face: its docstring, then every name of its ``__all__`` in order, each either
    documented here or linked to the face that documents it."""
    import importlib

    module = importlib.import_module(face)
    lines = [
        f"# `{face}`",
        "",
        f"Generated from `{face}`: its docstring and every name in its `__all__`, nothing",
        "else (every other module is private).",
        "",
        "```{eval-rst}",
        f".. automodule:: {face}",
        "   :no-members:",
        "```",
        "",
    ]
    elsewhere = []
    for name in module.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(module, name)
        home = home_face(name, obj)
        if home != face:
            elsewhere.append(f"{{py:obj}}`{home}.{name}`")
            continue
        lines += ["```{eval-rst}", _directive(face, name, obj), "```", ""]
    if elsewhere:
        lines += ["Also exported here, documented on their own face: " + ", ".join(elsewhere), ""]
    return "\n".join(lines)


# ---- Sphinx hooks ----------------------------------------------------------------------


def generate(srcdir: Path) -> None:
    out = srcdir / GENERATED
    (out / "api").mkdir(parents=True, exist_ok=True)
    pages = {"cli.md": cli_page(), "settings.md": settings_page(), "errors.md": errors_page()}
    pages |= {f"api/{face}.md": api_page(f"kbgraph.{face}") for face in FACE_PAGES}
    pages["api/kbgraph.md"] = api_page("kbgraph")
    for name, text in pages.items():
        path = out / name
        # Unchanged pages keep their mtime, so an incremental build rereads nothing.
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def public_names() -> set[str]:
    """``face.Name`` for every name of every face's ``__all__``."""
    import importlib

    return {
        f"{face}.{name}"
        for face in FACES
        for name in importlib.import_module(face).__all__
        if not name.startswith("__")
    }


def _on_missing_reference(app: Sphinx, domain: Any, node: Any) -> bool | None:
    """The build runs nitpicky, but only a reference to a public name (``face.Name``)
    that the reference does not document is an error; a type from another library or
    from a private module (a type hint's real path) is not ours to document."""
    if node.get("reftarget", "") in app.config.kbgraph_public_names:
        return None  # the warning stands
    return True


def _on_builder_inited(app: Sphinx) -> None:
    generate(Path(app.srcdir))


def nav_sections(index_source: str) -> list[tuple[str, list[str]]]:
    """The (caption, [docname]) of each ``{toctree}`` block of the home page, in order."""
    sections = []
    for block in re.findall(r"```\{toctree\}\n(.*?)```", index_source, re.S):
        caption = re.search(r"^:caption: (.+)$", block, re.M)
        docs = [
            line.strip().removesuffix(".md")
            for line in block.splitlines()
            if line.strip() and not line.startswith(":")
        ]
        sections.append((caption.group(1) if caption else "Pages", docs))
    return sections


def first_paragraph(source: str, limit: int = 300) -> str:
    """The first paragraph of prose after the title (no code, table, list or comment),
    links reduced to their text, cut after the sentence that passes ``limit``."""
    prose = re.sub(r"^```.*?^```", "", source, flags=re.S | re.M)
    for block in re.split(r"\n\s*\n", prose):
        block = block.strip()
        if block and block[0] not in "#`|-<*{:" and not block.startswith("!["):
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", " ".join(block.split()))
            end = text.find(". ", limit)
            return text if end < 0 else text[: end + 1]
    return ""


def llms_txt(app: Sphinx) -> str:
    srcdir = Path(app.srcdir)
    index = (srcdir / "index.md").read_text(encoding="utf-8")
    lines = [f"# {app.config.project}", "", f"> {first_paragraph(index)}", ""]
    for caption, docs in nav_sections(index):
        lines += [f"## {caption}", ""]
        for doc in docs:
            source = (srcdir / f"{doc}.md").read_text(encoding="utf-8")
            title = app.env.titles[doc].astext()
            summary = first_paragraph(source)
            lines.append(f"- [{title}]({doc}.md)" + (f": {summary}" if summary else ""))
        lines.append("")
    return "\n".join(lines)


def _on_build_finished(app: Sphinx, exception: BaseException | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir, srcdir = Path(app.outdir), Path(app.srcdir)
    for doc in app.env.found_docs:
        target = outdir / f"{doc}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(srcdir / f"{doc}.md", target)
    (outdir / "llms.txt").write_text(llms_txt(app), encoding="utf-8")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("kbgraph_public_names", public_names(), "env")
    app.connect("builder-inited", _on_builder_inited)
    app.connect("warn-missing-reference", _on_missing_reference)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
