"""The function jitted in NaN and index-check modes: it takes the bare `jit`'s own program (traced once by
JAX and cached, so the bare and the instrumented calls share one trace of the user's function) and
evaluates it equation by equation with the checks' extra outputs, a NaN flag and a bounds table (see
:mod:`checked_program`).

A failure of the instrumentation itself (not of the user's code, which ran when the program was traced)
falls back to evaluating the program as it is, with nothing flagged: the user's program still runs once,
unchanged.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxcheck.runtime_checks import nans
from jaxcheck.runtime_checks.checked_program import Checks, evaluate
from jaxcheck.runtime_checks.jaxprs import program_of

LOG = logging.getLogger(__name__)


def instrumented(jitted: Any, check_nans: bool, check_indices: bool) -> Callable[..., Any]:
    """A function with the signature of `jitted`'s function returning `(outputs, nan_flag, bounds_table)`
    for the arguments `jitted` takes; jit it with `jitted`'s options."""

    @functools.wraps(jitted._fun)
    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
        program = program_of(jitted, args, kwargs)
        closed = program.closed
        try:
            checks = Checks(check_nans, check_indices)
            outs = evaluate(closed.jaxpr, closed.consts, program.inputs, checks)
            flag, table = nans.nan_flag(checks.flags, outs), checks.table()
        except Exception:  # noqa: BLE001 - see the module docstring
            LOG.debug("jaxcheck cannot instrument %s", getattr(jitted, "__name__", jitted), exc_info=True)
            outs = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *program.inputs)
            flag, table = jnp.bool_(False), jnp.zeros((0, 3), jnp.int32)
        return jax.tree_util.tree_unflatten(program.out_tree, outs), flag, table

    return run
