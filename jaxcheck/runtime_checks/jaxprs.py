"""Re-evaluating a traced program equation by equation, shared by the checks that instrument it (NaN
flags, bounds tables): trace the user's function to a jaxpr, bind each equation again with its source
information, and read literals and variables."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax._src import core as jax_core
from jax._src import source_info_util


def has_tracer(value: Any) -> bool:
    """True when any leaf of `value` is a tracer (the call happens inside another trace)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(value))


def traced_program(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, list[Any]]:
    """`fun`'s closed jaxpr for these arguments, the shape of its output, and the leaves it takes as inputs.
    Arguments that arrive as Python values (no tracer) stay static, as `jit` would see them."""
    static_nums = tuple(i for i, arg in enumerate(args) if not has_tracer(arg))
    static_kwargs = {key: value for key, value in kwargs.items() if not has_tracer(value)}
    dynamic_kwargs = {key: value for key, value in kwargs.items() if key not in static_kwargs}
    closed, shape = jax.make_jaxpr(functools.partial(fun, **static_kwargs), static_argnums=static_nums,
                                   return_shape=True)(*args, **dynamic_kwargs)
    inputs = jax.tree_util.tree_leaves(([a for i, a in enumerate(args) if i not in static_nums], dynamic_kwargs))
    return closed, shape, inputs


def bind(eqn: Any, invals: Sequence[Any]) -> list[Any]:
    """Apply `eqn`'s primitive to `invals` again, under its own source information and context."""
    params = eqn.primitive.get_bind_params(eqn.params)
    with source_info_util.user_context(eqn.source_info.traceback, name_stack=eqn.source_info.name_stack), \
            eqn.ctx.manager:
        out = eqn.primitive.bind(*invals, **params)
    return list(out) if eqn.primitive.multiple_results else [out]


def read(env: dict[Any, Any], atom: Any) -> Any:
    """The value of a jaxpr atom: a literal's own value, else the variable's in `env`."""
    return atom.val if isinstance(atom, jax_core.Literal) else env[atom]


INLINED = frozenset({"jit", "pjit", "closed_call"})
"""Calls whose inner program is evaluated equation by equation too (an inner `jax.jit` of the user's)."""


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], observe: Callable[[Any, list[Any]], None]) -> list[Any]:
    """Evaluate `jaxpr` (under a trace) equation by equation, inner `INLINED` programs included, calling
    `observe(eqn, inputs)` after each other equation is bound; return the outputs."""
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        invals = [read(env, atom) for atom in eqn.invars]
        if eqn.primitive.name in INLINED and "jaxpr" in eqn.params:
            inner = eqn.params["jaxpr"]
            outs = evaluate(inner.jaxpr, inner.consts, invals, observe)
        else:
            outs = bind(eqn, invals)
            observe(eqn, invals)
        env.update(zip(eqn.outvars, outs))
    return [read(env, atom) for atom in jaxpr.outvars]
