"""JAX501 at run time: a function traced more often than the budget, with what changed between traces.

Every trace records a signature: per argument leaf its shape, dtype and weak type (traced values) or its
type and value (static values), plus the identity of the function object and of the jit wrapper. Traces
are counted per code object, so a fresh `jax.jit(lambda ...)` per loop iteration counts too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax


@dataclass(frozen=True)
class Signature:
    """What a trace depended on."""

    leaves: tuple[tuple[str, str], ...]  # (argument path, description)
    function: int  # id of the Python function object
    wrapper: int  # id of the jit wrapper


def signature(args: tuple[Any, ...], kwargs: dict[str, Any], function: Any, wrapper: Any,
              names: tuple[str, ...]) -> Signature:
    """The signature of one trace; `names` are the function's parameter names (for paths)."""
    leaves = []
    for index, arg in enumerate(args):
        name = names[index] if index < len(names) else f"args[{index}]"
        leaves.extend(_describe(name, arg))
    for key in sorted(kwargs):
        leaves.extend(_describe(key, kwargs[key]))
    return Signature(tuple(leaves), id(function), id(wrapper))


def _describe(name: str, value: Any) -> list[tuple[str, str]]:
    described = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
        where = name + jax.tree_util.keystr(path)
        aval = getattr(leaf, "aval", None)
        if isinstance(leaf, jax.core.Tracer) and aval is not None:
            weak = " weak" if getattr(aval, "weak_type", False) else ""
            described.append((where, f"{aval.dtype}{list(aval.shape)}{weak}"))
        elif callable(leaf):
            described.append((where, f"callable {getattr(leaf, '__qualname__', type(leaf).__name__)} at {id(leaf):#x}"))
        else:
            text = repr(leaf)
            described.append((where, f"static {type(leaf).__name__} {text if len(text) <= 40 else text[:37] + '...'}"))
    return described


def what_changed(before: Signature, after: Signature) -> str:
    """A description of the differences between two consecutive traces."""
    old, new = dict(before.leaves), dict(after.leaves)
    changes = [f"{path}: {old.get(path, 'absent')} -> {new.get(path, 'absent')}"
               for path in dict.fromkeys([*old, *new]) if old.get(path) != new.get(path)]
    if changes:
        return "; ".join(changes[:4]) + (f" (and {len(changes) - 4} more)" if len(changes) > 4 else "")
    if before.function != after.function:
        return "nothing but the function object: a new lambda, local def or partial is jitted each time"
    if before.wrapper != after.wrapper:
        return ("nothing but the jit wrapper: `jax.jit(f)` is applied again each time, and each wrapper has its "
                "own cache")
    return "nothing visible in the arguments (the cache was cleared, or a global changed the program)"


def retrace_fix(before: Signature, after: Signature) -> str:
    """The fix matching :func:`what_changed`."""
    statics = [p for (p, d) in after.leaves if d.startswith("static") and dict(before.leaves).get(p) != d]
    if statics:
        return f"pass {statics[0]!r} as an array argument instead of a static value, or keep it constant"
    if dict(before.leaves) != dict(after.leaves):
        return "pad or bucket inputs to a few fixed shapes and dtypes (weak types come from Python scalars)"
    return "apply `jax.jit` once, outside the loop, to a function defined once"
