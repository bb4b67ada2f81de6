"""Fast iteration over the code inside LibCST nodes.

`node.children` runs LibCST's visitor protocol over every child (it costs more than a whole rule
walk); these read the dataclass fields that can hold statements or expressions directly, skipping
whitespace, punctuation and the `attr` name of an attribute (never a reference of its own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "colon", "leading_lines", "lines_after_decorators", "header",
        "footer", "equal", "dot", "newline", "indent", "asynchronous", "operator", "arrow", "lbracket",
        "rbracket", "lbrace", "rbrace", "relative", "attr", "keyword", "star", "prefix", "quote",
    }
)
_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


class _NodeTypes(dict[type, bool]):
    """Whether a type is a LibCST node type, remembered per type: LibCST's node classes are abstract
    base classes, whose `isinstance` costs several times a dictionary lookup (millions per run)."""

    def __missing__(self, kind: type) -> bool:
        answer = self[kind] = issubclass(kind, cst.CSTNode)
        return answer


IS_NODE_TYPE = _NodeTypes()
"""`IS_NODE_TYPE[type(value)]`: whether `value` is a LibCST node (a fast `isinstance(value, cst.CSTNode)`)."""


def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of `node_type` that can hold statements or expressions (cached per type)."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace") and f.type not in (str, bool)
        )
        _FIELDS[node_type] = fields
    return fields


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The code nodes directly inside `node`, in field order (source order for expressions and simple
    statements; a definition's decorators, a handler's type and a case's guard come after the body)."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for child in value:
                if IS_NODE_TYPE[type(child)]:
                    yield child
        elif IS_NODE_TYPE[kind]:
            yield value


def descendants(node: cst.CSTNode, outside: tuple[type[cst.CSTNode], ...] = ()) -> Iterator[cst.CSTNode]:
    """`node` and every code node inside it (depth first; order otherwise unspecified), leaving out
    nodes of the `outside` types and everything in them (nested functions, say)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if outside and isinstance(current, outside):
            continue
        yield current
        stack.extend(child_nodes(current))


def scan(node: cst.CSTNode, visitor: object) -> None:
    """Call `visitor.visit_<NodeType>(node)` for `node` and every code node inside it, depth first in
    field order (see :func:`child_nodes`); a method that returns False skips that node's children. A
    read-only stand-in for `node.visit(...)`, which runs LibCST's full visitor protocol (leave methods,
    change tracking) on every node. The visitor's class should be defined once (its methods are looked
    up once per class and kept)."""
    methods = _visit_methods(type(visitor))
    stack = [node]
    while stack:
        current = stack.pop()
        method = methods.get(type(current).__name__)
        if method is not None and method(visitor, current) is False:
            continue
        children = list(child_nodes(current))
        children.reverse()
        stack.extend(children)


_METHODS: dict[type, dict[str, Callable[[object, cst.CSTNode], object]]] = {}


def _visit_methods(visitor_type: type) -> dict[str, Callable[[object, cst.CSTNode], object]]:
    methods = _METHODS.get(visitor_type)
    if methods is None:
        methods = {name.removeprefix("visit_"): getattr(visitor_type, name)
                   for name in dir(visitor_type) if name.startswith("visit_")}
        _METHODS[visitor_type] = methods
    return methods
