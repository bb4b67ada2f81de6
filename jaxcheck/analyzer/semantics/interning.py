"""Hash-consing for the model's immutable nodes: equal nodes are one object.

A dependency DAG threads values through helpers (`a, b = f(a, b), g(b, a)`), so the same node is
reached along exponentially many paths. Interning makes equal nodes identical, so hashing a node
costs its own fields (its children's hashes are their identities' or cached by `frozenset`), equality
is an identity test wherever both sides come from the table (dict and set lookups test identity first),
and a per-node memo visits a shared node once.

Contract: :class:`Interned` classes are frozen dataclasses; constructing one (directly,
`dataclasses.replace`, the codec, unpickling) returns the table's instance when an equal one exists.
Equality stays structural, so a node made after the table was emptied still compares equal; only the
speed of that comparison changes.

Cost bound: the table holds at most :data:`MAX_INTERNED` nodes; past that it is emptied (the work
memoised over nodes then starts again, the answers do not change).

Walks over a DAG of nodes visit each node once (`values.nested_deps`, the memo of `guards.Guarding`,
`values.canonical_text`, the solver's evaluation memo, the codec's shared nodes).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

MAX_INTERNED = 1 << 21
"""How many distinct nodes the table keeps before it is emptied (about 2 million: a few hundred MB)."""

_table: dict[tuple[object, ...], Any] = {}
_getters: dict[type, Callable[[Any], tuple[object, ...]]] = {}


class Interned(type):
    """Metaclass of hash-consed frozen dataclasses (see the module docstring)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        made = super().__call__(*args, **kwargs)
        getter = _getters.get(cls)
        if getter is None:
            getter = _getters[cls] = _fields_getter(cls)
        key = (cls, *getter(made))
        found = _table.get(key)
        if found is not None:
            return found
        if len(_table) >= MAX_INTERNED:
            _table.clear()
        _table[key] = made
        return made


class InternedNode(metaclass=Interned):
    """Base of hash-consed nodes: pickling rebuilds a node through its constructor, so a node sent to
    a worker process is interned there too; the codec shares it like pickle does."""

    __slots__ = ()
    __codec_shared__ = True
    """The codec writes a node once per encoding and refers to it after (see :mod:`jaxcheck.analyzer.codec`)."""

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        getter = _getters.get(type(self)) or _fields_getter(type(self))
        return type(self), getter(self)


def _fields_getter(cls: type) -> Callable[[Any], tuple[object, ...]]:
    names = [field.name for field in dataclasses.fields(cls)]
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda node: (single(node),)
    return operator.attrgetter(*names)
