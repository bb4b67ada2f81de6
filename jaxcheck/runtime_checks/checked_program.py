"""Evaluating a program JAX traced, under jaxcheck's own jit, with the NaN and index checks' extra values:
one NaN flag and one bounds table (see :mod:`nans`, :mod:`bounds`).

Equations are bound again one by one with their source information; inner jitted functions are inlined.
`checkpoint`s and custom derivatives are bound whole (inlining a `custom_jvp` call was seen to change the
compiled program's float results); for index checks their inner program is evaluated a second time beside
them, for its bounds table alone: the call's outputs are those of the call bound whole, and what the
shadow computes beyond the indices it tests has no use, so XLA drops it.
Loop and branch bodies are checked too: a `scan`, `while_loop` (`fori_loop`) or `cond` (`switch`) is bound
again through `jax.lax` with its body evaluated the same way, the body's flag and table carried out of
it (a flag is or-ed over iterations, a table row keeps the first out-of-bounds index of its operation).
Only jaxcheck's evaluation is traced for that, never the user's function; the same operations run, so
the program's outputs are those of the bare program.

Bounds: a body's table has one row per checked operation in it, whatever the iteration count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from jaxcheck.runtime_checks import bounds, nans
from jaxcheck.runtime_checks.jaxprs import CALLS, INLINED, bind, has_user_frame, inner_program, read


_SHAPE: Callable[..., Any] = jax.ShapeDtypeStruct


@dataclass
class Checks:
    """The extra values collected while evaluating one program or body."""

    nans: bool
    indices: bool
    flags: list[Any] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)  # int32[n, 3] each

    def fresh(self) -> Checks:
        """Empty checks of the same kinds, for a body."""
        return Checks(self.nans, self.indices)

    def observe(self, eqn: Any, invals: Sequence[Any], caller: Any) -> None:
        if self.nans:
            self.flags.extend(nans.hidden_nans(eqn, invals))
        if self.indices and (row := bounds.row_of(eqn, invals, caller)) is not None:
            self.tables.append(row[None])

    def flag(self) -> Any:
        return jnp.any(jnp.stack(self.flags)) if self.flags else jnp.bool_(False)

    def table(self) -> Any:
        return jnp.concatenate(self.tables) if self.tables else jnp.zeros((0, 3), jnp.int32)


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], checks: Checks, caller: Any = None) -> list[Any]:
    """Evaluate `jaxpr` (under a trace) equation by equation, collecting `checks`; return its outputs.
    `caller`: the innermost call equation with the user's frames whose program holds `jaxpr`."""
    env = dict(zip(jaxpr.constvars, consts)) | dict(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        invals = [read(env, atom) for atom in eqn.invars]
        name = eqn.primitive.name
        if name in INLINED and "jaxpr" in eqn.params:
            inner = eqn.params["jaxpr"]
            outs = evaluate(inner.jaxpr, inner.consts, invals, checks, eqn if has_user_frame(eqn) else caller)
        elif name in _BODIES:
            outs = _BODIES[name](eqn, invals, checks, eqn if has_user_frame(eqn) else caller)
        else:
            outs = bind(eqn, invals)
            checks.observe(eqn, invals, caller)
            if checks.indices and name in CALLS and (inner := inner_program(eqn)) is not None:
                shadow = Checks(nans=False, indices=True)
                evaluate(getattr(inner, "jaxpr", inner), getattr(inner, "consts", []), invals, shadow,
                         eqn if has_user_frame(eqn) else caller)
                checks.tables.extend(shadow.tables)
        env.update(zip(eqn.outvars, outs))
    return [read(env, atom) for atom in jaxpr.outvars]


def _checked_body(closed: Any, checks: Checks, caller: Any) -> Callable[..., tuple[list[Any], Any, Any]]:
    """`closed` as a function returning its outputs, its flag and its table."""

    def run(*args: Any) -> tuple[list[Any], Any, Any]:
        inner = checks.fresh()
        outs = evaluate(closed.jaxpr, closed.consts, args, inner, caller)
        return outs, inner.flag(), inner.table()

    return run


def _rows(body: Callable[..., tuple[list[Any], Any, Any]], *args: Any) -> int:
    """How many table rows `body` returns (traced abstractly: jaxcheck's evaluation only)."""
    return int(jax.eval_shape(lambda *a: body(*a)[2], *args).shape[0])


def _first(table: Any, new: Any) -> Any:
    """`table`'s rows, each replaced by `new`'s where it holds no out-of-bounds index yet."""
    return jnp.where((table[:, :1] == 0) & (new[:, :1] != 0), new, table)


def _scan(eqn: Any, args: Sequence[Any], checks: Checks, caller: Any) -> list[Any]:
    params = eqn.params
    consts, carried = params["num_consts"], params["num_carry"]
    body = _checked_body(params["jaxpr"], checks, caller)
    init, xs = list(args[consts:consts + carried]), list(args[consts + carried:])
    rows = _rows(body, *args[:consts], *init, *(_SHAPE(x.shape[1:], x.dtype) for x in xs))

    def step(carry: tuple[list[Any], Any, Any], x: list[Any]) -> tuple[tuple[list[Any], Any, Any], list[Any]]:
        state, flag, table = carry
        outs, new_flag, new_table = body(*args[:consts], *state, *x)
        return (outs[:carried], flag | new_flag, _first(table, new_table)), outs[carried:]

    start = (init, jnp.bool_(False), jnp.zeros((rows, 3), jnp.int32))
    (state, flag, table), ys = jax.lax.scan(step, start, xs, length=params["length"], reverse=params["reverse"],
                                            unroll=params["unroll"])
    checks.flags.append(flag)
    checks.tables.append(table)
    return [*state, *ys]


def _while(eqn: Any, args: Sequence[Any], checks: Checks, caller: Any) -> list[Any]:
    params = eqn.params
    test, tests, bodies = params["cond_jaxpr"], params["cond_nconsts"], params["body_nconsts"]
    body = _checked_body(params["body_jaxpr"], checks, caller)
    init = list(args[tests + bodies:])
    rows = _rows(body, *args[tests:tests + bodies], *init)

    def keep_going(carry: tuple[list[Any], Any, Any]) -> Any:
        return jax.core.eval_jaxpr(test.jaxpr, test.consts, *args[:tests], *carry[0])[0]

    def step(carry: tuple[list[Any], Any, Any]) -> tuple[list[Any], Any, Any]:
        state, flag, table = carry
        outs, new_flag, new_table = body(*args[tests:tests + bodies], *state)
        return outs, flag | new_flag, _first(table, new_table)

    state, flag, table = jax.lax.while_loop(keep_going, step, (init, jnp.bool_(False), jnp.zeros((rows, 3), jnp.int32)))
    checks.flags.append(flag)
    checks.tables.append(table)
    return list(state)


def _cond(eqn: Any, args: Sequence[Any], checks: Checks, caller: Any) -> list[Any]:
    branches = [_checked_body(branch, checks, caller) for branch in eqn.params["branches"]]
    rows = max(_rows(branch, *args[1:]) for branch in branches)

    def padded(branch: Callable[..., tuple[list[Any], Any, Any]]) -> Callable[..., tuple[list[Any], Any, Any]]:
        def run(*operands: Any) -> tuple[list[Any], Any, Any]:
            outs, flag, table = branch(*operands)
            return outs, flag, jnp.concatenate([table, jnp.zeros((rows - table.shape[0], 3), jnp.int32)])

        return run

    outs, flag, table = jax.lax.switch(args[0], [padded(branch) for branch in branches], *args[1:])
    checks.flags.append(flag)
    checks.tables.append(table)
    return list(outs)


_BODIES = {"scan": _scan, "while": _while, "cond": _cond}
