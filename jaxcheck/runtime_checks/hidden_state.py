"""JAX104 at run time: hidden Python state found by tracing twice through fresh wrappers.

A pure function traces to the same program every time. When two traces of the same call differ (a
literal, a captured constant, the operations), something read at trace time changed between them:
`np.random`, `time.time()`, a counter. The first differing equation names the user's line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from jax._src import source_info_util

from jaxcheck.runtime_checks import originals
from jaxcheck.runtime_checks.frames import is_library_file
from jaxcheck.runtime_checks.side_effects import capture_output


def fresh(fun: Callable[..., Any]) -> Callable[..., Any]:
    """A new function object calling `fun`, so that JAX's caches never answer for it."""

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)

    return wrapper


def trace_quietly(fun: Callable[..., Any], jit_kwargs: dict[str, Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
    """The closed jaxpr of a fresh `jax.jit(fun, **jit_kwargs)` traced on `args`, with output swallowed."""
    with capture_output(forward=False):
        return originals.jit(fresh(fun), **jit_kwargs).trace(*args, **kwargs).jaxpr


def eqn_line(eqn: Any) -> tuple[str, int] | None:
    """The user's `(path, line)` that created a jaxpr equation."""
    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None or is_library_file(frame.file_name):
        return None
    return frame.file_name, frame.start_line


def first_difference(first: Any, second: Any) -> tuple[Any, str] | None:
    """`(equation, description)` of the first place two closed jaxprs differ, or None when equal."""
    if len(first.consts) != len(second.consts):
        return None if str(first.jaxpr) == str(second.jaxpr) else (_first_eqn(first, second), "the operations differ")
    unequal = {var for var, a, b in zip(first.jaxpr.constvars, first.consts, second.consts) if not _equal(a, b)}
    for eqn_a, eqn_b in zip(first.jaxpr.eqns, second.jaxpr.eqns):
        if str(eqn_a) != str(eqn_b):
            return eqn_a, f"`{eqn_a.primitive.name}` differs: `{_short(eqn_a)}` vs `{_short(eqn_b)}`"
        if unequal.intersection(v for v in eqn_a.invars if not hasattr(v, "val")):
            return eqn_a, f"a constant captured by `{eqn_a.primitive.name}` differs"
    if len(first.jaxpr.eqns) != len(second.jaxpr.eqns) or str(first.jaxpr) != str(second.jaxpr):
        return _first_eqn(first, second), "the operations differ"
    return None


def _first_eqn(first: Any, second: Any) -> Any:
    for eqn_a, eqn_b in zip(first.jaxpr.eqns, second.jaxpr.eqns):
        if str(eqn_a) != str(eqn_b):
            return eqn_a
    return first.jaxpr.eqns[-1] if first.jaxpr.eqns else None


def _short(eqn: Any) -> str:
    text = " ".join(str(eqn).split())
    return text if len(text) <= 70 else text[:67] + "..."


def _equal(a: Any, b: Any) -> bool:
    try:
        a, b = np.asarray(a), np.asarray(b)
    except Exception:  # noqa: BLE001 - opaque constants (keys, tokens) compare by identity
        return a is b
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
