"""JAX401 at run time: PRNG keys consumed twice, typed (`jax.random.key`) and legacy (`PRNGKey`) alike.

Within one program: the traced jaxpr is scanned for keys consumed by more than one `random_bits` or
`random_split` (legacy keys reach them through `random_wrap`, which is followed back to the raw key), and
for keys consumed inside a `scan` or `while` body (`fori_loop` included) that are the same on every
iteration: closed over by the body, or carried through it unchanged. Consumption is counted as
`jax_debug_key_reuse` counts it: `fold_in` and `clone` consume nothing, the branches of a `cond` are one
consumption (a key consumed in each branch is consumed once), a loop body or a branch that consumes one
key twice is a reuse of its own, and an inner `jit` or `remat` counts as its equations.
Across calls: the top-level arguments a function consumes are found once, at trace time; on each call the
key objects passed there are looked up by identity among the keys already consumed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import jax

from jaxcheck.runtime_checks.hidden_state import eqn_line

CONSUMING = frozenset({"random_bits", "random_split"})
_CALLS = frozenset({"jit", "pjit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call",
                    "custom_vjp_call"})


def consumers(jaxpr: Any) -> dict[Any, list[Any]]:
    """For each variable of `jaxpr` (an open Jaxpr) holding a key: the equations that consume it."""
    root: dict[Any, Any] = {}
    found: dict[Any, list[Any]] = {}

    def origin(var: Any) -> Any:
        return root.get(var, var)

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "random_wrap":
            root[eqn.outvars[0]] = origin(eqn.invars[0])
        elif name in CONSUMING and not hasattr(eqn.invars[0], "val"):
            found.setdefault(origin(eqn.invars[0]), []).append(eqn)
        else:
            counted: set[Any] = set()  # keys this loop or `cond` consumed already (in another branch)
            for inner, outer_vars in _sub_jaxprs(eqn):
                inner_found = consumers(inner)
                for inner_var, outer in zip(inner.invars, outer_vars):
                    uses = inner_found.get(inner_var)
                    if not uses or hasattr(outer, "val") or origin(outer) in counted:
                        continue
                    # inside a loop or branch a consumption counts once (a reuse inside is found in its own
                    # scope, see `reuse_within`); inside a call as often as it happens. Library code traced
                    # inside has no user line: the calling equation stands for it.
                    located = [use if eqn_line(use) is not None else eqn for use in uses]
                    if name not in _CALLS:
                        counted.add(origin(outer))
                        located = located[:1]
                    found.setdefault(origin(outer), []).extend(located)
    return found


def _sub_jaxprs(eqn: Any) -> list[tuple[Any, list[Any]]]:
    """`(inner jaxpr, the outer variables bound to its inputs)` for the sub-programs of an equation."""
    pairs = []
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        inner = getattr(inner, "jaxpr", inner)
        if inner is not None and hasattr(inner, "eqns") and len(inner.invars) == len(eqn.invars):
            pairs.append((inner, list(eqn.invars)))
    body = eqn.params.get("body_jaxpr")  # while: the inputs are the condition's constants, then the body's
    if body is not None:
        inner = getattr(body, "jaxpr", body)
        skipped = eqn.params.get("cond_nconsts", 0)
        if len(inner.invars) == len(eqn.invars) - skipped:
            pairs.append((inner, list(eqn.invars[skipped:])))
    for branch in eqn.params.get("branches", ()):
        inner = getattr(branch, "jaxpr", branch)
        if len(inner.invars) == len(eqn.invars) - 1:
            pairs.append((inner, list(eqn.invars[1:])))
    return pairs


def _invariant_inputs(eqn: Any) -> tuple[Any, list[Any]] | None:
    """`(body, its inputs that hold the same value on every iteration)` of a `scan` of more than one step
    or a `while` loop; None for other equations."""
    name = eqn.primitive.name
    if name == "scan" and eqn.params.get("length", 0) > 1:
        body, constants, carried = eqn.params["jaxpr"].jaxpr, eqn.params["num_consts"], eqn.params["num_carry"]
    elif name == "while":
        body, constants = eqn.params["body_jaxpr"].jaxpr, eqn.params["body_nconsts"]
        carried = len(body.outvars)
    else:
        return None
    carry_in = body.invars[constants:constants + carried]
    unchanged = [var for var, out in zip(carry_in, body.outvars[:carried]) if var is out]
    return body, [*body.invars[:constants], *unchanged]


def reuse_in_loops(closed: Any) -> list[Any]:
    """The consuming equations inside loop bodies (at any depth) whose key is the same on every iteration."""
    found: list[Any] = []
    pending = [closed.jaxpr]
    while pending:
        jaxpr = pending.pop()
        for eqn in jaxpr.eqns:
            loop = _invariant_inputs(eqn)
            if loop is not None:
                body, invariant = loop
                uses = consumers(body)
                found.extend(use for var in invariant for use in uses.get(var, ())[:1])
            pending.extend(inner for inner, _ in _sub_jaxprs(eqn))
    return found


def reuse_within(closed: Any) -> list[list[Any]]:
    """Each key consumed more than once in one run of the program, of a loop body or of a branch: the
    list of its consuming equations."""
    return [uses for jaxpr in _scopes(closed.jaxpr) for uses in consumers(jaxpr).values() if len(uses) > 1]


def _scopes(jaxpr: Any) -> list[Any]:
    """`jaxpr` and the loop bodies and branches inside it at any depth (inner calls are part of the scope
    that calls them: :func:`consumers` counts their equations there)."""
    scopes, pending = [jaxpr], [jaxpr]
    while pending:
        for eqn in pending.pop().eqns:
            inner = [body for body, _ in _sub_jaxprs(eqn)]
            if eqn.primitive.name not in _CALLS:
                scopes.extend(inner)
            pending.extend(inner)
    return scopes


def consumed_inputs(closed: Any) -> set[int]:
    """Indices of the program's inputs that are consumed as keys at least once."""
    found = consumers(closed.jaxpr)
    return {index for index, var in enumerate(closed.jaxpr.invars) if found.get(var)}


def is_key(value: Any) -> bool:
    """A typed key array, or a legacy raw key (uint32 with a trailing axis of 2)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    if jax.numpy.issubdtype(dtype, jax.dtypes.prng_key):
        return True
    return str(dtype) == "uint32" and tuple(getattr(value, "shape", ()))[-1:] == (2,)


class KeyTracker:
    """The keys consumed last, by identity, with the file and line of their use: at most `limit` key
    arrays of at most `element_limit` elements in all (a typed key is one element, a legacy key two, a
    batch of 1,024 typed keys 1,024), the oldest forgotten first; an array larger than `element_limit`
    is not held. Keys are held (so an id is
    never mistaken for a dead key's); tracking allocates no garbage-collected object per call, which in a
    JAX process would trigger costly collections."""

    def __init__(self, limit: int = 10_000, element_limit: int = 100_000) -> None:
        self._limit, self._element_limit = limit, element_limit
        self._order: deque[int] = deque()  # ids, oldest first (dicts are slow to pop from the front)
        self._keys: dict[int, Any] = {}
        self._files: dict[int, str] = {}
        self._lines: dict[int, int] = {}
        self._sizes: dict[int, int] = {}
        self._elements = 0

    def track(self, key: Any, file: str, line: int) -> tuple[str, int] | None:
        """Note `key` as consumed on `line` of `file`; return where it was consumed before when this is a
        second consumption, else None."""
        ident = id(key)
        if self._keys.get(ident) is key:
            return self._files[ident], self._lines[ident]
        size = max(1, int(getattr(key, "size", 1)))
        if size > self._element_limit:
            return None
        while self._order and (len(self._order) >= self._limit or self._elements + size > self._element_limit):
            oldest = self._order.popleft()
            self._elements -= self._sizes.pop(oldest)
            del self._keys[oldest], self._files[oldest], self._lines[oldest]
        self._order.append(ident)
        self._keys[ident], self._files[ident], self._lines[ident], self._sizes[ident] = key, file, line, size
        self._elements += size
        return None

    @property
    def held(self) -> tuple[int, int]:
        """`(key arrays, elements)` held now."""
        return len(self._order), self._elements


def lines_of(uses: list[Any]) -> list[tuple[str, int]]:
    """The user lines of consuming equations, in order (unknown lines left out)."""
    return [line for eqn in uses if (line := eqn_line(eqn)) is not None]
