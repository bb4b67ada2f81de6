"""NaN/Inf at run time (opt-in): detect in the compiled program, locate only after detection.

Detection: the checked function is jitted through an interpreter of its own jaxpr that adds one boolean
to the program: any NaN/Inf in the outputs, or any NaN reaching an operation that can hide it
(`jnp.where`'s `select_n`, `max`, `min`, `clamp`, reductions, integer conversion). The flag is read one
call late, when the device says it is ready, so the host never waits for it.

Location: the call's inputs are replayed equation by equation (inner jitted functions inlined) until the
first equation that makes a NaN (else an Inf) out of finite inputs; forward and backward pass alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcheck.runtime_checks.hidden_state import eqn_line
from jaxcheck.runtime_checks.jaxprs import INLINED, bind, evaluate, read, traced_program

MASKING = frozenset({"select_n", "max", "min", "clamp", "reduce_max", "reduce_min", "argmax", "argmin",
                     "convert_element_type"})


@dataclass(frozen=True)
class Origin:
    """Where a NaN or Inf first appeared."""

    primitive: str
    kind: str  # "NaN" or "Inf"
    where: tuple[str, int] | None
    backward: bool
    masked: bool  # it never reached the outputs
    argument: str | None  # set when an input already held it


def _inexact(value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jnp.inexact)


def _flagged_eval(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], flags: list[Any]) -> list[Any]:
    """Evaluate `jaxpr` (under a trace), appending to `flags` a boolean per value that can hide a NaN."""

    def observe(eqn: Any, invals: list[Any]) -> None:
        if eqn.primitive.name in MASKING:
            checked = invals[1:] if eqn.primitive.name == "select_n" else invals
            flags.extend(jnp.any(jnp.isnan(value)) for value in checked if _inexact(value))

    return evaluate(jaxpr, consts, args, observe)


def flagging(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` rewritten to return `(outputs, flag)`; jit the result (it keeps `fun`'s signature, so
    `static_argnames` still apply). Arguments that arrive as Python values stay static."""

    @functools.wraps(fun)
    def checked(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        closed, shape, inputs = traced_program(fun, args, kwargs)
        flags: list[Any] = []
        outs = _flagged_eval(closed.jaxpr, closed.consts, inputs, flags)
        flags.extend(~jnp.all(jnp.isfinite(value)) for value in outs if _inexact(value))
        flag = jnp.any(jnp.stack(flags)) if flags else jnp.bool_(False)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), outs), flag

    return checked


def _rebuilt(fun: Callable[..., Any], leaves: list[Any], tree: Any, dynamic: list[int]) -> Callable[..., Any]:
    def call(*values: Any) -> Any:
        filled = list(leaves)
        for index, value in zip(dynamic, values):
            filled[index] = value
        args, kwargs = jax.tree_util.tree_unflatten(tree, filled)
        return fun(*args, **kwargs)

    return call


def _bad(value: Any, kind: str) -> bool:
    if not _inexact(value):
        return False
    array = np.asarray(value)
    return bool(np.isnan(array).any() if kind == "NaN" else np.isinf(array).any())


def locate(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           names: Sequence[str]) -> Origin | None:
    """Replay `fun(*args, **kwargs)` op by op (arrays dynamic, everything else static) and return where the
    first NaN (else the first Inf) came from; None when the replay finds neither."""
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    dynamic = [i for i, leaf in enumerate(leaves) if isinstance(leaf, (jax.Array, np.ndarray))]
    closed = jax.make_jaxpr(_rebuilt(fun, leaves, tree, dynamic))(*(leaves[i] for i in dynamic))
    values = [leaves[i] for i in dynamic]
    for kind in ("NaN", "Inf"):
        for position, value in enumerate(values):
            if _bad(value, kind):
                argument = _argument_name(args, kwargs, names, dynamic[position])
                return Origin("input", kind, None, False, False, argument)
        found = _replay(closed.jaxpr, closed.consts, values, kind)
        if found is not None:
            eqn, outputs = found
            masked = not any(_bad(v, kind) for v in outputs)
            return Origin(eqn.primitive.name, kind, eqn_line(eqn), "transpose" in str(eqn.source_info.name_stack),
                          masked, None)
    return None


def _replay(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], kind: str) -> tuple[Any, list[Any]] | None:
    """The first equation (innermost) whose outputs hold `kind` while its inputs do not, with the
    program's outputs; None when there is none."""
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    found = None
    for eqn in jaxpr.eqns:
        invals = [read(env, atom) for atom in eqn.invars]
        if eqn.primitive.name in INLINED and "jaxpr" in eqn.params and found is None:
            inner = eqn.params["jaxpr"]
            result = _replay(inner.jaxpr, inner.consts, invals, kind)
            if result is not None:
                found = result[0]
                outs = result[1]
            else:
                outs = bind(eqn, invals)
        else:
            outs = bind(eqn, invals)
            if found is None and any(_bad(v, kind) for v in outs) and not any(_bad(v, kind) for v in invals):
                found = eqn
        env.update(zip(eqn.outvars, outs))
    outputs = [read(env, atom) for atom in jaxpr.outvars]
    return (found, outputs) if found is not None else None


def _argument_name(args: tuple[Any, ...], kwargs: dict[str, Any], names: Sequence[str], leaf_index: int) -> str:
    """The parameter whose pytree holds flat leaf number `leaf_index` of `(args, kwargs)`."""
    count = 0
    for index, arg in enumerate(args):
        size = len(jax.tree_util.tree_leaves(arg))
        if leaf_index < count + size:
            return names[index] if index < len(names) else f"args[{index}]"
        count += size
    for key in sorted(kwargs):
        size = len(jax.tree_util.tree_leaves(kwargs[key]))
        if leaf_index < count + size:
            return key
        count += size
    return "an argument"


def describe(origin: Origin, function: str) -> tuple[str, str]:
    """Message and fix of a NaN/Inf finding."""
    if origin.argument is not None:
        return (f"{origin.kind} passed to `{function}` in argument {origin.argument!r}",
                "find where the caller computed it (run the producing function under checks too)")
    passes = "backward pass (gradient)" if origin.backward else "forward pass"
    hidden = ", then hidden by `jnp.where`/max/min before the output, which `jax_debug_nans` misses" \
        if origin.masked else ""
    message = f"{origin.kind} first produced by `{origin.primitive}` in the {passes} of `{function}`{hidden}"
    fix = ("make the operation safe on every branch: clamp its input (`jnp.where(x > 0, x, 1.0)` before "
           "`log`/`sqrt`/division), not only its output")
    return message, fix
