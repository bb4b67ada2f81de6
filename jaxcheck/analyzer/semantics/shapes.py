"""Certain array shapes, read from syntax: what JAX203 (out-of-bounds-index) needs to know.

A shape is known only when it is certain: every dimension is written as an integer literal (or follows
from literals by JAX's own rules: `jnp.arange(2, 9, 3)` has 3 elements, `x.reshape(-1, 2)` of 6 elements
is `(3, 2)`). Anything else (a variable, a float, a keyword the model does not read, a size that does not
divide) gives None, never a guess. The builder attaches these shapes to values
(:attr:`jaxcheck.analyzer.semantics.values.Value.shape`) and joins them along control flow; this module only
knows single expressions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from jaxcheck.analyzer.semantics.syntax import argument, literal_ints

Shape = tuple[int, ...]
ShapeOf = Callable[[cst.BaseExpression], "Shape | None"]

SHAPE_FIRST = frozenset(f"jax.numpy.{name}" for name in ("zeros", "ones", "empty", "full"))
"""`jnp.zeros(shape)`: the shape is the first argument (or `shape=`)."""
SHAPE_SECOND = frozenset(f"jax.random.{name}" for name in ("normal", "uniform"))
"""`jax.random.normal(key, shape)`: the shape is the second argument (or `shape=`)."""
LIKE = frozenset(f"jax.numpy.{name}" for name in ("zeros_like", "ones_like", "empty_like", "full_like"))
"""`jnp.zeros_like(x)`: the shape of `x`, unless `shape=` is given."""
LITERAL_ARRAYS = frozenset({"jax.numpy.array", "jax.numpy.asarray"})
RESHAPES = frozenset({"jax.numpy.reshape"})
SHAPE_PRESERVING_METHODS = frozenset({"astype", "copy", "clip", "round", "conj", "conjugate"})
"""Array methods whose result has the shape of the array (`x.clip(0, 1)`; `x.round()`)."""
_NUMBERS = (cst.Integer, cst.Float, cst.Imaginary)


def created_shape(name: str, call: cst.Call, shape_of: ShapeOf) -> Shape | None:
    """The certain shape of the array that the JAX call `call` (qualified name `name`) returns; None
    when it is not one of the creation calls read here or its arguments are not literals. `shape_of`
    gives the certain shape of an argument (for `zeros_like` and `jnp.reshape`)."""
    if any(arg.star for arg in call.args):
        return None
    if name in SHAPE_FIRST or name in SHAPE_SECOND:
        given = argument(call, 0 if name in SHAPE_FIRST else 1, ("shape",))
        return _dimensions(given) if given is not None else None
    if name in LIKE:
        source = argument(call, 0, ("a",))
        if source is None or any(arg.keyword is not None and arg.keyword.value == "shape" for arg in call.args):
            return None
        return shape_of(source)
    if name in LITERAL_ARRAYS:
        data = argument(call, 0, ("object", "a"))
        return literal_shape(data) if data is not None and _keywords(call) <= {"dtype", "copy"} else None
    if name == "jax.numpy.arange":
        return _arange(call)
    if name in ("jax.numpy.eye", "jax.numpy.identity"):
        return _eye(call, name == "jax.numpy.identity")
    if name in RESHAPES:
        source, target = argument(call, 0, ("a",)), argument(call, 1, ("shape", "newshape"))
        size = _size(shape_of(source)) if source is not None else None
        dims = literal_ints(target) if target is not None else None
        return resolve_reshape(dims, size) if _keywords(call) <= {"a", "shape", "newshape", "order"} else None
    return None


def method_shape(method: str, call: cst.Call, receiver: Shape | None) -> Shape | None:
    """The certain shape of `x.<method>(...)` for an array `x` of shape `receiver`: `reshape` with
    literal sizes, and methods that keep the shape (`astype`, `clip`, ...)."""
    if receiver is None or any(arg.star for arg in call.args):
        return None
    if method in SHAPE_PRESERVING_METHODS:
        return receiver
    if method != "reshape" or not call.args or _keywords(call) - {"order"}:
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None]
    dims: tuple[int, ...] | None
    if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
        dims = literal_ints(positional[0])
    else:
        sizes = [_integer(value) for value in positional]
        dims = tuple(size for size in sizes if size is not None) if None not in sizes else None
    return resolve_reshape(dims, _size(receiver))


def resolve_reshape(dims: tuple[int, ...] | None, size: int | None) -> Shape | None:
    """The shape `reshape(dims)` gives an array of `size` elements: one `-1` is resolved; None when a size
    is unknown, negative, or the sizes do not multiply out (JAX raises there)."""
    if dims is None or size is None:
        return None
    unknown = [index for index, dim in enumerate(dims) if dim == -1]
    if len(unknown) > 1 or any(dim < -1 for dim in dims):
        return None
    known = math.prod(dim for dim in dims if dim != -1)
    if unknown:
        if known == 0 or size % known:
            return None
        dims = tuple(size // known if dim == -1 else dim for dim in dims)
    return dims if math.prod(dims) == size else None


def literal_shape(node: cst.BaseExpression) -> Shape | None:
    """The shape of a nested list or tuple of number literals (`[[1, 2], [3, 4]]` -> `(2, 2)`; a number
    -> `()`); None when an element is anything else or the nesting is ragged."""
    if isinstance(node, _NUMBERS) or (isinstance(node, cst.UnaryOperation) and isinstance(node.expression, _NUMBERS)):
        return ()
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return ()
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    if any(isinstance(element, cst.StarredElement) for element in node.elements):
        return None
    inner = {literal_shape(element.value) for element in node.elements}
    if len(inner) > 1 or None in inner:
        return None
    rest = inner.pop() if inner else ()
    assert rest is not None
    return (len(node.elements), *rest)


def indexed_shape(shape: Shape | None, elements: Sequence[cst.SubscriptElement]) -> Shape | None:
    """The shape of `x[...]` for `x` of shape `shape` when every index is an integer literal or a bare
    `:` (an integer drops its axis, `:` keeps it); None for anything else."""
    if shape is None or len(elements) > len(shape):
        return None
    kept: list[int] = []
    for element, length in zip(elements, shape):
        part = element.slice
        if isinstance(part, cst.Index) and _integer(part.value) is not None:
            continue
        if isinstance(part, cst.Slice) and part.lower is None and part.upper is None and part.step is None:
            kept.append(length)
            continue
        return None
    return (*kept, *shape[len(elements):])


def broadcast_literal(node: cst.BaseExpression) -> bool:
    """True for a number literal, which combines with an array of any shape without changing it."""
    return literal_shape(node) == () and not isinstance(node, cst.Name)


@dataclass(frozen=True, slots=True)
class ConstantIndex:
    """One constant entry of a subscript: an integer `index`, or a slice whose literal non-negative
    `start` is given (`index` is then the start and `slice` True), on axis `axis`; `node` is the entry."""

    node: cst.SubscriptElement
    index: int
    axis: int
    slice: bool = False


@dataclass(frozen=True, slots=True)
class OutOfBounds:
    """A constant entry of a subscript outside its axis: an integer `index` not in `[-length, length)`
    (JAX wraps a negative index once, then clamps reads and drops writes), or for a slice (`slice` True)
    a start at or past the end, `index >= length`, which selects nothing."""

    node: cst.CSTNode
    """The subscript element, or the index argument of `jnp.take`."""
    index: int
    axis: int
    length: int
    slice: bool = False
    flattened: bool = False
    """The index is into the flattened array (`jnp.take` without an axis): `length` is its size."""


def out_of_bounds(shape: Shape, elements: Sequence[cst.SubscriptElement]) -> list[OutOfBounds]:
    """The constant entries of a subscript on an array of certain shape `shape` that are out of range."""
    found: list[OutOfBounds] = []
    for entry in constant_indices(elements, len(shape)):
        length = shape[entry.axis]
        outside = entry.index >= length > 0 if entry.slice else not -length <= entry.index < length
        if outside:
            found.append(OutOfBounds(entry.node, entry.index, entry.axis, length, entry.slice))
    return found


def constant_indices(elements: Sequence[cst.SubscriptElement], ndim: int) -> list[ConstantIndex]:
    """The constant integer indices and slice starts of a subscript on an array of `ndim` axes, with the
    axis each applies to. `None` (a new axis) takes no axis, `...` the axes no other entry takes;
    entries before `...` count from the first axis, entries after it from the last. An entry whose axis
    count is unknown (an index array, a mask) ends the entries that can be placed on its side. Empty
    when the subscript takes more axes than the array has (JAX raises there: nothing is silent)."""
    ellipses = [i for i, e in enumerate(elements) if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)]
    if len(ellipses) > 1:
        return []
    split = ellipses[0] if ellipses else len(elements)
    front, back = list(elements[:split]), list(elements[split + 1:])
    found: list[ConstantIndex] = []
    taken = 0
    complete = True
    for side, axes in ((front, range(ndim)), (back[::-1], range(ndim - 1, -1, -1))):
        positions = iter(axes)
        for element in side:
            part = element.slice
            if isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and part.value.value == "None":
                continue
            axis = next(positions, None)
            if axis is None:
                return []  # more indices than axes: an IndexError, not a silent clamp
            taken += 1
            if isinstance(part, cst.Index):
                index = _integer(part.value)
                if index is None:
                    complete = False
                    break
                found.append(ConstantIndex(element, index, axis))
            elif isinstance(part, cst.Slice):
                start = _integer(part.lower) if part.lower is not None else None
                step = _integer(part.step) if part.step is not None else 1
                if start is not None and start >= 0 and step is not None and step > 0:
                    found.append(ConstantIndex(element, start, axis, slice=True))
    if complete and taken > ndim:
        return []
    return found


def _integer(node: cst.BaseExpression | None) -> int | None:
    """An integer literal, optionally negated (`7`, `-1`, `0x10`); None for anything else."""
    if not isinstance(node, (cst.Integer, cst.UnaryOperation)):
        return None
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.expression, cst.Integer):
        return None
    numbers = literal_ints(node)
    return numbers[0] if numbers is not None and len(numbers) == 1 else None


def _dimensions(node: cst.BaseExpression) -> Shape | None:
    """A literal shape argument: an integer or a tuple/list of integers, none negative."""
    if isinstance(node, (cst.Tuple, cst.List)) and not all(_integer(e.value) is not None for e in node.elements):
        return None
    if not isinstance(node, (cst.Tuple, cst.List)) and _integer(node) is None:
        return None
    dims = literal_ints(node)
    return dims if dims is not None and all(dim >= 0 for dim in dims) else None


def _keywords(call: cst.Call) -> set[str]:
    return {arg.keyword.value for arg in call.args if arg.keyword is not None}


def _arange(call: cst.Call) -> Shape | None:
    """`jnp.arange(n)`, `arange(a, b)`, `arange(a, b, step)` with integer literals (no keywords but dtype)."""
    if _keywords(call) - {"dtype"}:
        return None
    bounds = [_integer(arg.value) for arg in call.args if arg.keyword is None]
    if not 1 <= len(bounds) <= 3 or any(bound is None for bound in bounds):
        return None
    numbers = [bound for bound in bounds if bound is not None]
    if len(numbers) == 3 and numbers[2] == 0:
        return None
    return (len(range(*numbers)),)


def _eye(call: cst.Call, identity: bool) -> Shape | None:
    """`jnp.eye(n)`, `jnp.eye(n, m)` (`M=`), `jnp.identity(n)` with integer literals."""
    if _keywords(call) - ({"dtype"} if identity else {"M", "k", "dtype"}):
        return None
    rows_node = argument(call, 0, ("N", "n"))
    rows = _integer(rows_node) if rows_node is not None else None
    columns_node = None if identity else argument(call, 1, ("M",))
    columns = _integer(columns_node) if columns_node is not None else rows
    if rows is None or columns is None or rows < 0 or columns < 0:
        return None
    return (rows, columns)


def _size(shape: Shape | None) -> int | None:
    return None if shape is None else math.prod(shape)
