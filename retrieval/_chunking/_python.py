"""Python source as :class:`~._syntax.Node` records, through the standard library's ``ast``.

Definitions (``def``, ``async def``, ``class``) and assignments to plain names at module or
class level (``DEFAULT_TIMEOUT_CONFIG = ...``, a class attribute) are named; a class is a
container (a long one is split into its members). A node starts at its first decorator, or
at the comment block right above it. The module docstring and the imports that follow it
(``from __future__``, ``import``, and ``if TYPE_CHECKING:`` / ``try:`` blocks of imports)
are one node of their own. A file ``ast`` cannot parse gives None: the caller falls back to
the language-independent chunker.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence

from ._syntax import Node

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


def python_nodes(text: str) -> list[Node] | None:
    """The top-level nodes of a Python module, or None when it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.split("\n")
    nodes = _body(tree.body, lines, floor=-1, named=True)
    header = _header_length(tree.body)
    if header:
        head = Node(0, nodes[header - 1].last, children=tuple(nodes[:header]), alone=True)
        nodes = [head, *nodes[header:]]
    return nodes


def _body(stmts: Sequence[ast.stmt], lines: list[str], floor: int, named: bool) -> list[Node]:
    """Nodes of a statement list; ``floor`` is the last line before it that belongs to
    something else (comments above the first statement attach down to it)."""
    out: list[Node] = []
    for stmt in stmts:
        out.append(_node(stmt, lines, floor, named))
        floor = (stmt.end_lineno or stmt.lineno) - 1
    return out


def _node(stmt: ast.stmt, lines: list[str], floor: int, named: bool) -> Node:
    first = stmt.lineno - 1
    decorators = getattr(stmt, "decorator_list", None) or []
    if decorators:
        first = min(first, *(d.lineno - 1 for d in decorators))  # ``@`` and name share it
    while first - 1 > floor and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    last = (stmt.end_lineno or stmt.lineno) - 1
    inner = [s for block in _blocks(stmt) for s in block]
    children_named = isinstance(stmt, ast.ClassDef)
    children = _body(inner, lines, stmt.lineno - 1, children_named)
    return Node(
        first=first,
        last=last,
        name=_name(stmt) if named or isinstance(stmt, _DEFINITIONS) else None,
        children=tuple(children),
        container=isinstance(stmt, ast.ClassDef),
    )


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in ``stmt`` (bodies, branches, handlers, cases)."""
    blocks: list[list[ast.stmt]] = []
    for attr in ("body", "orelse", "finalbody"):
        value = getattr(stmt, attr, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            blocks.append(value)
    for handler in getattr(stmt, "handlers", None) or []:
        blocks.append(handler.body)
    for case in getattr(stmt, "cases", None) or []:
        blocks.append(case.body)
    blocks.sort(key=lambda block: block[0].lineno)
    return blocks


def _name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, _DEFINITIONS):
        return stmt.name
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return ", ".join(names) if names else None


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _only_imports(stmt: ast.stmt) -> bool:
    """An import, or an ``if`` / ``try`` whose body imports (``if TYPE_CHECKING:``,
    ``try: import ujson except ImportError: ...``)."""
    if isinstance(stmt, _IMPORTS):
        return True
    if isinstance(stmt, ast.If | ast.Try):
        return bool(stmt.body) and all(_only_imports(s) for s in stmt.body)
    return False


def _header_length(body: Sequence[ast.stmt]) -> int:
    """How many leading statements are the module docstring and imports."""
    count = 1 if body and _is_docstring(body[0]) else 0
    while count < len(body) and _only_imports(body[count]):
        count += 1
    return count


__all__ = ["python_nodes"]
