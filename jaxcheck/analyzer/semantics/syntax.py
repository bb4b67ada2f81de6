"""Reading JAX-relevant facts straight from syntax: dotted names, call arguments, literal tuples."""

from __future__ import annotations

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.tree import child_nodes, scan


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


class _Binder:
    """Collects the names a block binds (see :func:`bound_names`)."""

    def __init__(self, nested: bool) -> None:
        self.names: set[str] = set()
        self.nested = nested

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self.nested

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.nested

    def _add(self, target: cst.CSTNode) -> None:
        self.names.update(target_names(target))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._add(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._add(node.name.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._add(node.target)


def bound_names(node: cst.CSTNode, nested: bool = True) -> set[str]:
    """Every name `node` binds or deletes with a statement or expression: assignments, `for` and `with`
    targets, `except ... as`, walrus, `del` (not definitions or imports); in nested functions and
    lambdas too unless `nested` is False."""
    binder = _Binder(nested)
    scan(node, binder)
    return binder.names


def names_read(node: cst.CSTNode) -> list[str]:
    """The plain names an expression reads (`f` and `cfg` in `make(f, k=cfg.x)`), outside lambdas."""
    names: list[str] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            names.append(current.value)
        elif isinstance(current, cst.Attribute):
            pending.append(current.value)
        elif isinstance(current, cst.Arg):
            pending.append(current.value)
        elif not isinstance(current, cst.Lambda):
            pending.extend(child_nodes(current))
    return names


def target_names(target: cst.CSTNode) -> list[str]:
    """The plain names an assignment target binds (`a`, `a, (b, *c)`); not attributes or items."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def is_docstring(statement: cst.CSTNode) -> bool:
    """Whether a statement is a docstring: a line holding one string literal."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
