"""Replaying a program JAX traced, equation by equation, to find the first one that made a NaN (or an Inf)
out of inputs without one: the NaN location of JAX701.

Inner jitted functions, `checkpoint`s and custom derivatives' primal programs are inlined; loop and branch bodies are replayed too: the branch a `cond` or
`switch` took, each iteration of a `scan`, `fori_loop` or `while_loop` (then the loop is run again whole
for its outputs), and each shard of a `shard_map` over one mesh axis (a `pmap`). An equation inside a body
is in the backward pass when its loop is (the body's own name stack is relative). Only values are read:
debug callbacks are skipped, and no user code runs.

Bounds: a loop is replayed op by op for at most :data:`ITERATIONS_REPLAYED` iterations (it is then
looked at as one operation, at the line of the loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcheck.runtime_checks.frames import is_library_file
from jaxcheck.runtime_checks.jaxprs import bind, has_user_frame, inner_program, read

SKIPPED = frozenset({"debug_callback", "debug_print"})
"""Side effects without outputs: a replay leaves them out (they fired when the program ran)."""
ITERATIONS_REPLAYED = 10_000


@dataclass(frozen=True)
class Made:
    """The equation that first made the NaN or Inf, the user's line that made it, and whether it is in
    the backward pass."""

    eqn: Any
    where: tuple[str, int] | None
    backward: bool


def inexact(value: Any) -> bool:
    """True when `value` has a float or complex dtype."""
    dtype = getattr(value, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jnp.inexact)


def bad(value: Any, kind: str) -> bool:
    """True when `value` is a float or complex array holding `kind` ("NaN" or "Inf")."""
    if not inexact(value):
        return False
    array = np.asarray(value)
    return bool(np.isnan(array).any() if kind == "NaN" else np.isinf(array).any())


def first_made(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], kind: str, backward: bool = False,
               caller: Any = None) -> tuple[Made | None, list[Any]]:
    """The first equation (innermost) whose outputs hold `kind` while its inputs do not (None when there
    is none), and the program's outputs. `backward`: the program is in the backward pass; `caller`: the
    innermost call equation with the user's frames whose program holds `jaxpr` (the line of an equation
    traced inside one of JAX's own jitted functions is that call's)."""
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    found: Made | None = None
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in SKIPPED:
            continue
        invals = [read(env, atom) for atom in eqn.invars]
        inside = backward or "transpose" in str(eqn.source_info.name_stack)
        within = eqn if has_user_frame(eqn) else caller
        made: Made | None = None
        inner = inner_program(eqn)
        if inner is not None:
            made, outs = first_made(getattr(inner, "jaxpr", inner), getattr(inner, "consts", []), invals, kind, inside,
                                    within)
        elif name == "shard_map":
            made, outs = _shards(eqn, invals, kind, inside, within)
        else:
            if found is None and name in _BODIES:
                made = _BODIES[name](eqn, invals, kind, inside, within)
            outs = bind(eqn, invals)
            if made is None and any(bad(v, kind) for v in outs) and not any(bad(v, kind) for v in invals):
                made = Made(eqn, user_line(eqn) or (user_line(caller) if caller is not None else None), inside)
        found = found or made
        env.update(zip(eqn.outvars, outs))
    return found, [read(env, atom) for atom in jaxpr.outvars]


def user_line(eqn: Any) -> tuple[str, int] | None:
    """The user's `(path, line)` that made `eqn`: its innermost frame outside JAX, installed libraries and
    the standard library (a library called by the user's line is reported at that line)."""
    traceback = eqn.source_info.traceback
    for frame in traceback.frames if traceback is not None else []:
        if not is_library_file(frame.file_name):
            return frame.file_name, frame.line_num
    return None


def _cond(eqn: Any, args: Sequence[Any], kind: str, backward: bool, caller: Any) -> Made | None:
    """The branch taken (an index out of range takes the last branch, as XLA's conditional does)."""
    branches = eqn.params["branches"]
    index = int(np.asarray(args[0]))
    branch = branches[index if 0 <= index < len(branches) else len(branches) - 1]
    return first_made(branch.jaxpr, branch.consts, args[1:], kind, backward, caller)[0]


def _scan(eqn: Any, args: Sequence[Any], kind: str, backward: bool, caller: Any) -> Made | None:
    params = eqn.params
    body, consts, carried = params["jaxpr"], params["num_consts"], params["num_carry"]
    carry, xs = list(args[consts:consts + carried]), args[consts + carried:]
    steps = range(params["length"])
    for step in list(reversed(steps) if params["reverse"] else steps)[:ITERATIONS_REPLAYED]:
        made, outs = first_made(body.jaxpr, body.consts, [*args[:consts], *carry, *(x[step] for x in xs)],
                                kind, backward, caller)
        if made is not None:
            return made
        carry = outs[:carried]
    return None


def _while(eqn: Any, args: Sequence[Any], kind: str, backward: bool, caller: Any) -> Made | None:
    params = eqn.params
    test, body = params["cond_jaxpr"], params["body_jaxpr"]
    tests, bodies = params["cond_nconsts"], params["body_nconsts"]
    carry = list(args[tests + bodies:])
    for _ in range(ITERATIONS_REPLAYED):
        if not bool(jax.core.eval_jaxpr(test.jaxpr, test.consts, *args[:tests], *carry)[0]):
            return None
        made, carry = first_made(body.jaxpr, body.consts, [*args[tests:tests + bodies], *carry], kind, backward,
                                 caller)
        if made is not None:
            return made
    return None


_BODIES = {"cond": _cond, "scan": _scan, "while": _while}


def _shards(eqn: Any, args: Sequence[Any], kind: str, backward: bool, caller: Any) -> tuple[Made | None, list[Any]]:
    """A `shard_map` over one mesh axis (a pmap's) shard by shard: each shard's inputs are cut from the
    whole arrays by their specs, its outputs put back together. A body that needs the other shards (a
    collective) fails to bind here: the NaN is then not located."""
    mesh, body = eqn.params["mesh"], eqn.params["jaxpr"]
    if len(mesh.shape) != 1:
        raise NotImplementedError("a shard_map over more than one mesh axis")
    (axis, count), = mesh.shape.items()

    def dimension(spec: Any) -> int | None:
        found = [d for d, entry in enumerate(spec) if entry is not None]
        if any(spec[d] != axis for d in found) or len(found) > 1:
            raise NotImplementedError(f"spec {spec}")
        return found[0] if found else None

    ins = [dimension(spec) for spec in eqn.params["in_specs"]]
    found: Made | None = None
    pieces = []
    for shard in range(count):
        shard_args = [a if d is None else jnp.split(a, count, axis=d)[shard] for a, d in zip(args, ins)]
        made, outs = first_made(body, [], shard_args, kind, backward, caller)
        found = found or made
        pieces.append(outs)
    outs = [pieces[0][k] if d is None else jnp.concatenate([p[k] for p in pieces], axis=d)
            for k, d in enumerate(dimension(spec) for spec in eqn.params["out_specs"])]
    return found, outs
