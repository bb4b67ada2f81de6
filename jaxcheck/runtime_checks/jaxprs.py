"""The program JAX traced for a checked `jit`, and re-evaluating it equation by equation, shared by the
checks that instrument it (NaN flags, bounds tables) or replay it (NaN location): the closed jaxpr comes
from JAX's own cache for the bare jitted function (the user's function is never traced again), each
equation is bound again with its source information."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax._src import core as jax_core
from jax._src import pjit
from jax._src import source_info_util


def has_tracer(value: Any) -> bool:
    """True when any leaf of `value` is a tracer (the call happens inside another trace)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(value))


@dataclass(frozen=True)
class Program:
    """What a jitted function runs for one call: the closed jaxpr, its flat inputs (`constants` hoisted
    constants first, then the dynamic arguments' leaves), the output tree and the inputs' names."""

    closed: Any
    inputs: list[Any]
    out_tree: Any
    arg_names: tuple[str, ...]
    constants: int


def program_of(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Program:
    """The program `jitted(*args, **kwargs)` runs (a `jax.jit` object), as `jitted.trace` finds it: from
    JAX's cache when the call already traced, else by tracing it (once, cached for the call)."""
    params, inputs = pjit._infer_params(jitted._fun, jitted._jit_info, args, kwargs)
    constants = len(params.consts)
    names = ("<constant>",) * constants + tuple(params.arg_names)
    return Program(params.params["jaxpr"], list(inputs), params.out_tree, names, constants)


def pmap_program(pmapped: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Program:
    """The program a `jax.pmap` object runs for one call: JAX 0.10 runs a pmap as its own `jit` of a
    `shard_map`, found (as `pmapped.lower` finds it) through JAX's caches, never traced again."""
    infer = dict(zip(pmapped.lower.__code__.co_freevars, (cell.cell_contents for cell in pmapped.lower.__closure__)))
    _, jitted, flat, *_ = infer["infer_params"](*args, **kwargs)
    return program_of(jitted, tuple(flat), {})


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


def has_user_frame(eqn: Any) -> bool:
    """True when `eqn`'s traceback reaches code outside JAX (an equation traced inside one of JAX's own
    jitted functions has only JAX's frames: the call of that function has the user's)."""
    traceback = eqn.source_info.traceback
    codes = traceback.raw_frames()[0] if traceback is not None else []
    return any(source_info_util.is_user_filename(code.co_filename) for code in codes)


INLINED = frozenset({"jit", "pjit", "closed_call"})
"""Calls whose inner program is evaluated equation by equation too (an inner `jax.jit` of the user's)."""
CALLS = frozenset({"remat2", "checkpoint", "custom_jvp_call", "custom_vjp_call", "core_call"})
"""Other calls a NaN replay goes into (on the host: the compiled program is not changed)."""


def inner_program(eqn: Any) -> Any:
    """The program a call equation (:data:`INLINED`, :data:`CALLS`) runs on its own inputs, else None."""
    name = eqn.primitive.name
    if name in INLINED or name in CALLS:
        return eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
    return None
