"""JavaScript, TypeScript, Go, Rust and Java as :class:`~._syntax.Node` records, through
tree-sitter grammars (the ``tree-sitter`` wheels and one grammar wheel per language).

Each grammar's declarations are named (a function, method, class, interface, struct, impl,
type, enum, module, and constants and fields at the top level or in a class body); classes,
interfaces, impls, traits and modules are containers. A Go method is named after its
receiver (``Client.Do``), a Rust ``impl`` after its type. A node's first line includes the
comments, decorators and attributes right above it. Leading imports (``import``,
``package``, ``use``) and the comments among them are the file's header node. Statements
are the named syntax nodes that begin a line. tree-sitter never refuses a file (a syntax
error is an ``ERROR`` node among the others); a language whose grammar is not installed
gives None and the caller falls back to the language-independent chunker.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ._syntax import Node


@dataclass(frozen=True, slots=True)
class Grammar:
    module: str  # the grammar wheel's module
    function: str  # its function returning the language pointer
    definitions: frozenset[str]  # node types that define a name anywhere
    declarations: frozenset[str]  # node types that define a name at top or class level
    containers: frozenset[str]
    header: frozenset[str]  # import-like node types that open a file


_COMMON_ATTACHED = frozenset({"comment", "line_comment", "block_comment", "decorator"})
_JS_DEFS = frozenset(
    {
        "function_declaration", "generator_function_declaration", "class_declaration",
        "method_definition", "abstract_class_declaration", "interface_declaration",
        "type_alias_declaration", "enum_declaration", "internal_module", "module",
        "abstract_method_signature", "method_signature",
    }
)  # fmt: skip
_JS_DECLS = frozenset(
    {"lexical_declaration", "variable_declaration", "public_field_definition", "field_definition"}
)
_JS_CONTAINERS = frozenset(
    {"class_declaration", "abstract_class_declaration", "interface_declaration",
     "internal_module", "module", "class"}
)  # fmt: skip
_JS_HEADER = frozenset({"import_statement"})

GRAMMARS: dict[str, Grammar] = {
    "javascript": Grammar(
        "tree_sitter_javascript", "language", _JS_DEFS, _JS_DECLS, _JS_CONTAINERS, _JS_HEADER
    ),
    "typescript": Grammar(
        "tree_sitter_typescript", "language_tsx", _JS_DEFS, _JS_DECLS, _JS_CONTAINERS, _JS_HEADER
    ),
    "go": Grammar(
        "tree_sitter_go",
        "language",
        frozenset({"function_declaration", "method_declaration", "type_declaration"}),
        frozenset({"const_declaration", "var_declaration"}),
        frozenset(),
        frozenset({"package_clause", "import_declaration"}),
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        "language",
        frozenset(
            {
                "function_item",
                "struct_item",
                "enum_item",
                "trait_item",
                "impl_item",
                "mod_item",
                "type_item",
                "union_item",
                "macro_definition",
                "function_signature_item",
            }
        ),
        frozenset({"const_item", "static_item"}),
        frozenset({"trait_item", "impl_item", "mod_item"}),
        frozenset({"use_declaration", "extern_crate_declaration", "inner_attribute_item"}),
    ),
    "java": Grammar(
        "tree_sitter_java",
        "language",
        frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "method_declaration",
                "constructor_declaration",
                "annotation_type_declaration",
            }
        ),
        frozenset({"field_declaration", "constant_declaration"}),
        frozenset(
            {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
        ),
        frozenset({"package_declaration", "import_declaration"}),
    ),
}
_ATTACHED = _COMMON_ATTACHED | {"attribute_item"}  # Rust's #[derive] before an item
_BODY_TYPES = frozenset(
    {"class_body", "interface_body", "object_type", "declaration_list", "statement_block",
     "enum_body", "block", "field_declaration_list", "enum_variant_list"}
)  # fmt: skip


@cache
def _parser(language: str) -> Any | None:
    grammar = GRAMMARS.get(language)
    if grammar is None:
        return None
    try:
        from tree_sitter import Language, Parser

        module = importlib.import_module(grammar.module)
        return Parser(Language(getattr(module, grammar.function)()))
    except (ImportError, AttributeError, ValueError, TypeError):
        return None


def available(language: str) -> bool:
    """Whether the grammar of ``language`` is installed."""
    return _parser(language) is not None


def treesitter_nodes(text: str, language: str) -> list[Node] | None:
    """The top-level nodes of a source file, or None when no grammar is installed."""
    parser = _parser(language)
    if parser is None:
        return None
    root = parser.parse(text.encode("utf-8", "surrogatepass")).root_node
    grammar = GRAMMARS[language]
    lines = text.split("\n")
    nodes = _children(root, grammar, lines, top=True)
    opening = grammar.header | _ATTACHED
    header = 0
    while header < len(nodes) and nodes[header].name is None and nodes[header].kind in opening:
        header += 1
    if any(n.kind in grammar.header for n in nodes[:header]):
        head = Node(0, nodes[header - 1].last, children=tuple(nodes[:header]), alone=True)
        return [head, *nodes[header:]]
    return nodes


def _starts_line(node: Any, lines: list[str]) -> bool:
    row, column = node.start_point
    return row < len(lines) and not lines[row][:column].strip()


def _children(ts_node: Any, grammar: Grammar, lines: list[str], *, top: bool) -> list[Node]:
    """The line-starting named descendants of ``ts_node`` (those inside one that does
    not begin a line are lifted), comments and decorators joined to what follows them."""
    out: list[Node] = []
    pending: int | None = None  # first line of comments/decorators awaiting their node
    for child in ts_node.named_children:
        if not _starts_line(child, lines):
            out.extend(_children(child, grammar, lines, top=top))
            continue
        if child.type in _ATTACHED:
            pending = child.start_point[0] if pending is None else pending
            if child.end_point[0] + 1 < len(lines) and not lines[child.end_point[0] + 1].strip():
                out.append(_leaf(child, pending))  # a blank line follows: not attached
                pending = None
            continue
        node = _node(child, grammar, lines, top=top)
        if pending is not None:
            node = replace(node, first=pending)
            pending = None
        out.append(node)
    if pending is not None:  # comments closing a block
        out.append(Node(pending, ts_node.end_point[0], kind="comment"))
    return out


def _leaf(child: Any, first: int) -> Node:
    return Node(first, child.end_point[0], kind=child.type)


def _node(child: Any, grammar: Grammar, lines: list[str], *, top: bool) -> Node:
    kind = child.type
    inner = _unwrapped(child)
    named = inner.type in grammar.definitions or (top and inner.type in grammar.declarations)
    container = inner.type in grammar.containers
    body = _body_of(inner)
    children = _children(body, grammar, lines, top=container) if body is not None else []
    last = child.end_point[0] - (1 if child.end_point[1] == 0 else 0)
    return Node(
        first=child.start_point[0],
        last=max(child.start_point[0], last),
        name=_name(inner) if named else None,
        children=tuple(children),
        container=container,
        kind=kind,
    )


def _unwrapped(node: Any) -> Any:
    """The declaration inside ``export …`` (JavaScript, TypeScript)."""
    if node.type == "export_statement":
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            return declaration
    return node


def _body_of(node: Any) -> Any | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in _BODY_TYPES:
            return child
    return node if node.named_child_count else None


def _text(node: Any | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


_NAMERS: dict[str, Callable[[Any], str]] = {}


def _name(node: Any) -> str | None:
    namer = _NAMERS.get(node.type)
    if namer is not None:
        return namer(node) or None
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    names = [_text(d.child_by_field_name("name")) for d in node.named_children]
    names = [n for n in names if n]
    return ", ".join(names) or None


def _go_method(node: Any) -> str:
    receiver = node.child_by_field_name("receiver")
    types = [_text(t) for t in _walk(receiver) if t.type == "type_identifier"]
    name = _text(node.child_by_field_name("name"))
    return f"{types[0]}.{name}" if types else name


def _method(node: Any) -> str:
    """A Go method is named after its receiver's type; a Java method by its name."""
    if node.child_by_field_name("receiver") is not None:
        return _go_method(node)
    return _text(node.child_by_field_name("name"))


def _rust_impl(node: Any) -> str:
    return _text(node.child_by_field_name("type"))


def _declarators(node: Any) -> str:
    names = []
    for child in node.named_children:
        if child.type in ("variable_declarator", "const_spec", "var_spec", "type_spec"):
            names.append(_text(child.child_by_field_name("name")))
    return ", ".join(n for n in names if n)


def _walk(node: Any) -> list[Any]:
    if node is None:
        return []
    out = [node]
    for child in node.named_children:
        out.extend(_walk(child))
    return out


_NAMERS.update(
    {
        "method_declaration": _method,
        "impl_item": _rust_impl,
        "lexical_declaration": _declarators,
        "variable_declaration": _declarators,
        "const_declaration": _declarators,
        "var_declaration": _declarators,
        "type_declaration": _declarators,
        "field_declaration": _declarators,
        "constant_declaration": _declarators,
    }
)


__all__ = ["GRAMMARS", "available", "treesitter_nodes"]
