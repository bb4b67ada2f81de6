"""What containers and return values hold, as far as constant keys and positions show: the elements of
`a, b = f(x)`, the key of `params["w"]`, the fields of `dict(w=...)`, and the paths at which a function's
`return` holds a JAX array (see :class:`ArrayLeaf`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics.summary import ArrayLeaf
from jaxcheck.analyzer.semantics.syntax import literal_strings
from jaxcheck.analyzer.semantics.values import JAX_ARRAY, CallDep, Key, OpaqueDep, Value


def call_elements(value: Value, count: int) -> tuple[Value, ...] | None:
    """`a, b = f(x)` for a project function `f`: one CallDep per element, resolved against f's tuple
    returns (with the opaque dependencies a call of another module's function also has, unchanged)."""
    calls = [dep for dep in value.deps if isinstance(dep, CallDep)]
    if len(calls) != 1 or calls[0].index is not None \
            or not all(isinstance(dep, OpaqueDep) for dep in value.deps if dep is not calls[0]):
        return None
    dep, others = calls[0], value.deps - {calls[0]}
    returned = value.returned
    return tuple(
        Value(others | {replace(dep, index=i)}, returned=None if returned is None else returned.at(i))
        for i in range(count)
    )


def constant_key(elements: Sequence[cst.SubscriptElement]) -> Key:
    """The constant key of a one-element subscript (`["w"]`, `[0]`, `[-1]`), else None."""
    if len(elements) != 1 or not isinstance(elements[0].slice, cst.Index):
        return None
    index = elements[0].slice.value
    negative = isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus)
    number = index.expression if isinstance(index, cst.UnaryOperation) and negative else index
    if isinstance(number, cst.Integer):
        return -int(number.value, 0) if negative else int(number.value, 0)
    names = literal_strings(index) if isinstance(index, cst.SimpleString) else None
    return names[0] if names else None


def keyword_fields(args: Sequence[cst.Arg], values: Sequence[Value]) -> tuple[tuple[str, Value], ...] | None:
    """The fields of `dict(w=..., b=...)` (keywords only), else None."""
    if any(arg.keyword is None or arg.star for arg in args):
        return None
    return tuple((arg.keyword.value, value) for arg, value in zip(args, values) if arg.keyword is not None)


def array_leaves(value: Value, prefix: tuple[Key, ...] = ()) -> Iterator[ArrayLeaf]:
    """Where returning `value` returns a JAX array: the value itself, fields of a dict literal, elements
    of a tuple or list, or what another project function returns."""
    if value.flags & JAX_ARRAY:
        yield ArrayLeaf(prefix)
    elif value.fields is not None:
        for name, field in value.fields:
            yield from array_leaves(field, (*prefix, name))
    elif value.elements is not None:
        for position, element in enumerate(value.elements):
            yield from array_leaves(element, (*prefix, position))
    elif value.returned is not None:
        yield ArrayLeaf(prefix, value.returned.function, value.returned.path)
