"""The lines of a `custom_vjp` backward rule, for the NaN and index checks.

JAX traces a `custom_vjp` backward rule while it transposes the program, under the source information of
the call to the custom function: every operation of the rule would carry the caller's line, so a NaN
made in the rule would be reported at the call. While NaN or index checks are on, the rule is traced
under its own lines instead (JAX's transpose of `custom_lin`, wrapped once by :func:`install`, clears
the borrowed traceback for the rule's call; the name stack is kept, so the rule's operations stay in the
backward pass). Only source information changes: the same operations, values and errors (JAX still adds
its note on an error in the rule, from the enclosing context). Without those checks the wrapper calls
JAX's rule unchanged. Observers (the eager NaN check, which cannot see a rule's operations one by one)
read the rule's inputs and cotangents after it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jax._src import source_info_util
from jax._src.interpreters import ad

from jaxcheck.runtime_checks.session import ACTIVE
from jaxcheck.runtime_checks.traced_body import guarded

_JAXS = ad.primitive_transposes[ad.custom_lin_p]


_OBSERVERS: list[Callable[[Any, Sequence[Any], Sequence[Any]], None]] = []


def _transpose(*args: Any, **params: Any) -> Any:
    """JAX's transpose of `custom_lin`, its backward rule traced under the rule's own lines; the
    observers see the rule (`params["bwd"]`), its inputs and its cotangents."""
    if not ACTIVE.instrumented:
        return _JAXS(*args, **params)
    state = source_info_util._source_info_context  # per thread
    borrowed = state.context
    state.context = source_info_util.SourceInfo(None, borrowed.name_stack)
    try:
        out = _JAXS(*args, **params)
    finally:
        state.context = borrowed
    for observe in _OBSERVERS:
        guarded(observe, params["bwd"], args, out)
    return out


def install(observe: Callable[[Any, Sequence[Any], Sequence[Any]], None] | None = None) -> None:
    """Put the wrapper in place of JAX's transpose of `custom_lin` (once), and add `observe` to the
    functions it calls after each rule (once each)."""
    ad.primitive_transposes[ad.custom_lin_p] = _transpose
    if observe is not None and observe not in _OBSERVERS:
        _OBSERVERS.append(observe)
