"""Reading JAX-relevant facts straight from syntax: dotted names, call arguments, literal tuples."""

from __future__ import annotations

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api


def dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def at_receiver(func: cst.BaseExpression) -> cst.BaseExpression | None:
    """The array `x` of a callee `x.at[...].set` (or another `.at` method); None for anything else."""
    if not (isinstance(func, cst.Attribute) and func.attr.value in jax_api.AT_METHODS):
        return None
    indexed = func.value
    if isinstance(indexed, cst.Subscript) and isinstance(indexed.value, cst.Attribute) and indexed.value.attr.value == "at":
        return indexed.value.value
    return None


def is_false_literal(node: cst.BaseExpression) -> bool:
    """Whether `node` is a literal whose truth value is False: `False`, `None`, `0`, `0.0`, `""`, `()`,
    `[]`, `{}`."""
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value == 0
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value in ("", b"")
    if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
        return not node.elements
    return False


def argument(node: cst.Call, position: int, keywords: tuple[str, ...]) -> cst.BaseExpression | None:
    """The argument passed at `position` or under one of `keywords`, if given plainly."""
    index = 0
    for arg in node.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if index == position:
                return arg.value
            index += 1
        elif arg.keyword.value in keywords:
            return arg.value
    return None


def literal_ints(node: cst.BaseExpression) -> tuple[int, ...] | None:
    """`1`, `-1`, `(0, 2)`, `[1]` -> the integers; None when not a literal."""
    if isinstance(node, cst.Integer):
        return (int(node.value, 0),)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_ints(node.expression)
        return None if inner is None or len(inner) != 1 else (-inner[0],)
    if isinstance(node, (cst.Tuple, cst.List)):
        numbers: list[int] = []
        for element in node.elements:
            inner = literal_ints(element.value)
            if inner is None or len(inner) != 1:
                return None
            numbers.extend(inner)
        return tuple(numbers)
    return None


def literal_strings(node: cst.BaseExpression) -> tuple[str, ...] | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return (value,) if isinstance(value, str) else None
    if isinstance(node, (cst.Tuple, cst.List)):
        names: list[str] = []
        for element in node.elements:
            inner = literal_strings(element.value)
            if inner is None or len(inner) != 1:
                return None
            names.extend(inner)
        return tuple(names)
    return None


def unbatched_positions(node: cst.BaseExpression) -> tuple[int, ...] | None:
    """Positions whose `in_axes` entry is `None`; () for a plain integer axis; None when unreadable."""
    if isinstance(node, cst.Integer) or (isinstance(node, cst.UnaryOperation) and literal_ints(node)):
        return ()
    if isinstance(node, (cst.Tuple, cst.List)):
        positions: list[int] = []
        for index, element in enumerate(node.elements):
            if isinstance(element, cst.StarredElement):
                return None
            if isinstance(element.value, cst.Name) and element.value.value == "None":
                positions.append(index)
        return tuple(positions)
    return None


def chain_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """`buffers["a"][0].x` -> `buffers`: the object an item or attribute chain starts from."""
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node


def last_statement(suite: cst.BaseSuite) -> cst.CSTNode | None:
    """The last statement of a block (the last small statement of its last line), if any."""
    statements = suite.body
    last: cst.CSTNode | None = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return last


def runs_once(node: cst.For) -> bool:
    """Whether the `for` loop iterates over a display of exactly one plain element (`for x in [x0]:`):
    its body runs once, so nothing in it repeats."""
    iterable = node.iter
    if isinstance(iterable, (cst.List, cst.Tuple, cst.Set)):
        return len(iterable.elements) == 1 and isinstance(iterable.elements[0], cst.Element)
    if isinstance(iterable, cst.Dict):
        return len(iterable.elements) == 1 and isinstance(iterable.elements[0], cst.DictElement)
    return False
