"""Source text for fixes, generated from LibCST nodes (never by string surgery on the file)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_MODULE = cst.Module(body=[])
_ATOMS = (
    cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
    cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp,
    cst.DictComp, cst.GeneratorExp,
)


def source(node: cst.CSTNode) -> str:
    """The code of `node` as written, including its own parentheses."""
    return _MODULE.code_for_node(node)


def _is_atom(node: cst.BaseExpression) -> bool:
    return isinstance(node, _ATOMS) or bool(getattr(node, "lpar", ()))


def argument(node: cst.BaseExpression) -> str:
    """`node` as a call argument: a bare tuple (`x[i] = 1, 2`) or a `yield` gets parentheses."""
    text = source(node)
    if isinstance(node, (cst.Tuple, cst.Yield)) and not node.lpar:
        return f"({text})"
    return text


def negated(node: cst.BaseExpression) -> str:
    """`-node`, parenthesised unless `node` is atomic: `-y`, `-(a + b)`, `-(-1)`."""
    text = source(node)
    return f"-{text}" if _is_atom(node) else f"-({text})"


def index(elements: Sequence[cst.SubscriptElement]) -> str:
    """The text between the brackets of a subscript, one `, ` between elements: `1:, j`."""
    return ", ".join(source(element.slice) for element in elements)
