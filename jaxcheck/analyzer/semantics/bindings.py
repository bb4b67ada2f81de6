"""Binding histories: where a name of a module or function scope is rebound or its object mutated,
and where callables are created (per loop), as the builder's traversal meets them.

A name *changes* when one execution path can bind it twice (two assignments that are not alternatives
of one `if`/`try`/`match`, an assignment inside a loop of its own scope, an augmented assignment, a
`global`/`nonlocal` write from another function) or when its object is mutated (`.append`, item or
attribute assignment, `del x[k]`, `setattr`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

MUTATING_METHODS = frozenset(
    {
        "append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "popitem", "add",
        "discard", "sort", "reverse", "fill", "resize", "put", "itemset", "__setitem__", "__delitem__",
    }
)
"""Methods that mutate the builtin containers and NumPy arrays they are called on."""

Branch = tuple[int, int]
"""(id of an `if`/`try`/`match` node, index of the alternative taken)."""


class ChangeKind(Enum):
    REBOUND = "reassigned"
    AUGMENTED = "updated in place"
    WRITTEN_FROM_FUNCTION = "reassigned through `global`/`nonlocal`"
    MUTATED = "mutated"


@dataclass(frozen=True, slots=True)
class ChangeSite:
    """Where a name's value changes: the node (for its line), how, when in traversal order, the code
    that runs it (`scope`: the key of the module or function whose own statements contain it, and the
    `loops` around it there, outermost first), and for an attribute store or a mutation through an
    attribute (`cfg.alpha = a`, `self.buf.append(v)`) the attribute written (`path`), or for a store to
    a constant string item (`CONFIG["lr"] *= 0.9`) its key: config objects (`ConfigDict`, `EasyDict`)
    serve `cfg["lr"]` and `cfg.lr` alike, so an attribute and an item of one name are one path."""

    node: cst.CSTNode
    kind: ChangeKind
    order: int
    scope: str = ""
    loops: tuple[int, ...] = ()
    path: str | None = None


@dataclass(frozen=True, slots=True)
class _Assignment:
    node: cst.CSTNode
    branches: tuple[Branch, ...]
    loops: tuple[int, ...]
    order: int


@dataclass(frozen=True, slots=True)
class CallableOrigin:
    """How a callable was created (`lambda`, `def`, `partial`, a transform's result, a bound method of
    an object) and inside which loops of its function (ids, outermost first)."""

    kind: str
    loops: tuple[int, ...]


@dataclass(slots=True)
class BindingHistory:
    """Collects assignments and mutations per (scope key, name); answers :meth:`change_of`."""

    _assignments: dict[tuple[str, str], dict[int, _Assignment]] = field(default_factory=dict)
    _changes: dict[tuple[str, str], dict[int, ChangeSite]] = field(default_factory=dict)
    _origins: dict[tuple[str, str], CallableOrigin] = field(default_factory=dict)
    _final: set[tuple[str, str]] = field(default_factory=set)

    def declared_final(self, scope: str, name: str) -> None:
        """`name: Final = ...`: the author promises it never changes."""
        self._final.add((scope, name))

    def assigned(self, scope: str, name: str, node: cst.CSTNode, branches: tuple[Branch, ...],
                 loops: tuple[int, ...], order: int) -> None:
        """Record a plain binding of `name` in `scope` (by `scope`'s own code) at `node`, inside `loops`
        (deduplicated: loops are interpreted twice)."""
        assignments = self._assignments.setdefault((scope, name), {})
        assignments.setdefault(id(node), _Assignment(node, branches, loops, order))

    def changed(self, scope: str, name: str, change: ChangeSite) -> None:
        """Record a change that always counts (augmented assignment, outer write, mutation)."""
        self._changes.setdefault((scope, name), {}).setdefault(id(change.node), change)

    def changes_of(self, scope: str, name: str, after: int = -1) -> list[ChangeSite]:
        """Every place, later than traversal order `after`, where `name` of `scope` changes after its
        first binding, in traversal order; empty when it never does (or is `Final`)."""
        if (scope, name) in self._final:
            return []
        changes = [c for c in self._changes.get((scope, name), {}).values() if c.order > after]
        assignments = list(self._assignments.get((scope, name), {}).values())
        for index, assignment in enumerate(assignments):
            if assignment.order <= after:
                continue
            rebinding = bool(assignment.loops) or any(
                not alternatives(earlier.branches, assignment.branches) for earlier in assignments[:index]
            )
            if rebinding:
                changes.append(ChangeSite(assignment.node, ChangeKind.REBOUND, assignment.order, scope, assignment.loops))
        return sorted(changes, key=lambda change: change.order)

    def written_from_function(self, scope: str, name: str) -> bool:
        """True when some function rebinds `name` of `scope` through `global`/`nonlocal`."""
        return any(c.kind is ChangeKind.WRITTEN_FROM_FUNCTION for c in self._changes.get((scope, name), {}).values())

    def created(self, scope: str, name: str, origin: CallableOrigin | None) -> None:
        """Record (or forget, with None) how the callable bound to `name` was created."""
        if origin is None:
            self._origins.pop((scope, name), None)
        else:
            self._origins[(scope, name)] = origin

    def origin_of(self, scope: str, name: str) -> CallableOrigin | None:
        return self._origins.get((scope, name))


def alternatives(first: tuple[Branch, ...], second: tuple[Branch, ...]) -> bool:
    """True when two statements (by their branch paths, outermost first) sit in different alternatives of
    one branching statement or expression: no run reaches both."""
    for (node_a, index_a), (node_b, index_b) in zip(first, second):
        if node_a != node_b:
            return False
        if index_a != index_b:
            return True
    return False
