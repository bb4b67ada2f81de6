"""JAX501 at run time, and the trace history tests read: how often each function traced, what changed.

Every trace JAX makes of a checked function records a signature: per argument leaf its shape, dtype and
weak type (traced values) or its type and value (static values, callables), the static fields of dataclass
pytrees (`eqx.field(static=True)`, Flax's `pytree_node=False`; at most :data:`STATIC_NODES_SEEN` nodes
searched per argument), plus the identity of the function object (jaxcheck wraps each function object once and never traces on its own, so JAX's caches
answer as they would for the bare function). Traces are counted per code object, so a fresh `jax.jit(lambda ...)` per loop iteration counts too.
Under `eqx.filter_jit` and `nnx.jit` the signature is the user's call's (see :mod:`library_jits`): arrays
traced, everything else static.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import jax


@dataclass(frozen=True)
class Signature:
    """What a trace depended on."""

    leaves: tuple[tuple[str, str], ...]  # (argument path, description)
    function: int  # id of the Python function object


@dataclass(frozen=True)
class TraceRecord:
    """One trace: its number (from 1), its signature, and what changed since the trace before it (None
    for the first)."""

    number: int
    signature: Signature
    changed: str | None


RECORDS_KEPT = 32
"""Traces whose records a history keeps (the latest); the count goes on."""
FUNCTIONS_KEPT = 4096
"""Code objects a trace log keeps histories for; the oldest history is dropped beyond."""


@dataclass
class TraceHistory:
    """How many times one function traced, and the records of its last :data:`RECORDS_KEPT` traces."""

    count: int = 0
    records: deque[TraceRecord] = field(default_factory=lambda: deque(maxlen=RECORDS_KEPT))

    def add(self, new: Signature) -> TraceRecord:
        """Count a trace with signature `new` and return its record."""
        last = self.records[-1].signature if self.records else None
        self.count += 1
        record = TraceRecord(self.count, new, None if last is None else what_changed(last, new))
        self.records.append(record)
        return record

    @property
    def changes(self) -> list[str]:
        """What changed at each retrace still recorded, oldest first."""
        return [record.changed for record in self.records if record.changed is not None]


class TraceLog:
    """The trace histories of one session, by code object; at most :data:`FUNCTIONS_KEPT` of them."""

    def __init__(self) -> None:
        self._histories: dict[CodeType, TraceHistory] = {}

    def history(self, code: CodeType) -> TraceHistory:
        """The history of `code` (an empty one, not stored, when it never traced)."""
        return self._histories.get(code) or TraceHistory()

    def add(self, code: CodeType, new: Signature) -> tuple[TraceHistory, TraceRecord]:
        """Count a trace of `code`; return its history and the new record."""
        history = self._histories.get(code)
        if history is None:
            if len(self._histories) >= FUNCTIONS_KEPT:
                del self._histories[next(iter(self._histories))]
            history = self._histories[code] = TraceHistory()
        return history, history.add(new)

    def __len__(self) -> int:
        return len(self._histories)


def signature(args: tuple[Any, ...], kwargs: dict[str, Any], function: Any, names: tuple[str, ...]) -> Signature:
    """The signature of one trace; `names` are the function's parameter names (for paths)."""
    leaves = []
    for index, arg in enumerate(args):
        name = names[index] if index < len(names) else f"args[{index}]"
        leaves.extend(_describe(name, arg))
    for key in sorted(kwargs):
        leaves.extend(_describe(key, kwargs[key]))
    return Signature(tuple(leaves), id(function))


def _describe(name: str, value: Any) -> list[tuple[str, str]]:
    described = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
        where = name + jax.tree_util.keystr(path)
        aval = getattr(leaf, "aval", None)
        if isinstance(leaf, jax.core.Tracer) and aval is not None:
            weak = " weak" if getattr(aval, "weak_type", False) else ""
            described.append((where, f"{aval.dtype}{list(aval.shape)}{weak}"))
        else:
            described.append((where, _static(leaf)))
    return described + _static_fields(name, value, [STATIC_NODES_SEEN])


def _static(value: Any) -> str:
    if callable(value):
        return f"callable {getattr(value, '__qualname__', type(value).__name__)} at {id(value):#x}"
    text = repr(value)
    return f"static {type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


STATIC_NODES_SEEN = 256
"""Pytree nodes of one argument searched for static fields per trace."""


def _static_fields(name: str, value: Any, budget: list[int]) -> list[tuple[str, str]]:
    """The static fields of the dataclass pytree nodes in `value` (`eqx.field(static=True)`, Flax's
    `pytree_node=False`): part of the tree's structure, so a change retraces, but no leaf shows it."""
    budget[0] -= 1
    if budget[0] < 0 or jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(value)):
        return []
    found: list[tuple[str, str]] = []
    children: list[tuple[str, Any]] = []
    if isinstance(value, (list, tuple)):
        children = [(f"{name}[{index}]", item) for index, item in enumerate(value)]
    elif isinstance(value, dict):
        children = [(f"{name}[{key!r}]", item) for key, item in value.items()]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field_ in dataclasses.fields(value):
            child = (f"{name}.{field_.name}", getattr(value, field_.name, None))
            if field_.metadata.get("static") or field_.metadata.get("pytree_node") is False:
                found.append((child[0], _static(child[1])))
            else:
                children.append(child)
    for child_name, child in children:
        found.extend(_static_fields(child_name, child, budget))
    return found


def what_changed(before: Signature, after: Signature) -> str:
    """A description of the differences between two consecutive traces."""
    old, new = dict(before.leaves), dict(after.leaves)
    changes = [f"{path}: {old.get(path, 'absent')} -> {new.get(path, 'absent')}"
               for path in dict.fromkeys([*old, *new]) if old.get(path) != new.get(path)]
    if changes:
        return "; ".join(changes[:4]) + (f" (and {len(changes) - 4} more)" if len(changes) > 4 else "")
    if before.function != after.function:
        return "nothing but the function object: a new lambda, local def or partial is jitted each time"
    return "nothing visible in the arguments (the cache was cleared, or a global changed the program)"


def retrace_fix(before: Signature, after: Signature) -> str:
    """The fix matching :func:`what_changed`."""
    statics = [p for (p, d) in after.leaves if d.startswith("static") and dict(before.leaves).get(p) != d]
    if statics:
        return f"pass {statics[0]!r} as an array argument instead of a static value, or keep it constant"
    if dict(before.leaves) != dict(after.leaves):
        return "pad or bucket inputs to a few fixed shapes and dtypes (weak types come from Python scalars)"
    return "apply `jax.jit` once, outside the loop, to a function defined once"
