"""NaN/Inf at run time (opt-in): detect in the compiled program, locate only after detection.

Detection: the checked function's program (the jaxpr JAX traced for it) is evaluated in a jitted
interpreter that adds one boolean to the program: any NaN/Inf in the outputs, or any NaN reaching an
operation that can hide it (`jnp.where`'s `select_n`, `max`, `min`, `clamp`, reductions, integer
conversion). The flag is read one call late, when the device says it is ready, so the host never waits.

Location: the same program is replayed on the call's inputs equation by equation (see :mod:`replay`:
inner jitted functions, loop and branch bodies, shards) until the first equation that makes a NaN (else
an Inf) out of finite inputs; forward and backward pass alike. The user's function is not run again: debug callbacks are skipped, and a
program with other side-effecting callbacks (`io_callback`) is not replayed (not located). A flag that the
replay of the same program on the same inputs does not reproduce is no finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxcheck.runtime_checks.jaxprs import Program, inner_program
from jaxcheck.runtime_checks.replay import SKIPPED, bad, first_made, inexact

MASKING = frozenset({"select_n", "max", "min", "clamp", "reduce_max", "reduce_min", "argmax", "argmin",
                     "convert_element_type"})
UNREPLAYABLE = frozenset({"io_callback"})
"""Side effects whose outputs the program uses: a program holding one is not replayed."""


@dataclass(frozen=True)
class Origin:
    """Where a NaN or Inf first appeared."""

    primitive: str
    kind: str  # "NaN" or "Inf"
    where: tuple[str, int] | None
    backward: bool
    masked: bool  # it never reached the outputs
    argument: str | None  # set when an input already held it


def hidden_nans(eqn: Any, invals: Sequence[Any]) -> list[Any]:
    """A boolean per input of `eqn` that can hide a NaN it holds (see :data:`MASKING`)."""
    if eqn.primitive.name not in MASKING:
        return []
    checked = invals[1:] if eqn.primitive.name == "select_n" else invals
    return [jnp.any(jnp.isnan(value)) for value in checked if inexact(value)]


def nan_flag(flags: list[Any], outputs: Sequence[Any]) -> Any:
    """The program's one boolean: any of `flags`, or a NaN/Inf in the `outputs`."""
    flags = [*flags, *(~jnp.all(jnp.isfinite(value)) for value in outputs if inexact(value))]
    return jnp.any(jnp.stack(flags)) if flags else jnp.bool_(False)


def locate(program: Program) -> Origin | None:
    """Replay `program` (which must be :func:`replayable`) on its inputs op by op (see :mod:`replay`) and
    return where the first NaN (else the first Inf) came from; None when the replay finds neither."""
    closed = program.closed
    for kind in ("NaN", "Inf"):
        for position, value in enumerate(program.inputs):
            if bad(value, kind):
                return Origin("input", kind, None, False, False, program.arg_names[position])
        found, outputs = first_made(closed.jaxpr, closed.consts, program.inputs, kind)
        if found is not None:
            masked = not any(bad(v, kind) for v in outputs)
            return Origin(found.eqn.primitive.name, kind, found.where, found.backward, masked, None)
    return None


def replayable(jaxpr: Any) -> bool:
    """False when replaying `jaxpr` would repeat a side effect: an `io_callback` anywhere, or a debug
    callback inside a program that is bound whole (a loop or branch body)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in UNREPLAYABLE:
            return False
        inner_programs = [getattr(inner, "jaxpr", inner) for param in eqn.params.values()
                          for inner in (param if isinstance(param, (tuple, list)) else (param,))]
        for inner in inner_programs:
            if not hasattr(inner, "eqns"):
                continue
            inlined = inner_program(eqn) is not None
            if inlined and not replayable(inner):
                return False
            if not inlined and _holds(inner, SKIPPED | UNREPLAYABLE):
                return False
    return True


def _holds(jaxpr: Any, names: frozenset[str]) -> bool:
    """True when `jaxpr` or any program inside it has an equation of a primitive in `names`."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in names:
            return True
        for param in eqn.params.values():
            for inner in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns") and _holds(inner, names):
                    return True
    return False


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
