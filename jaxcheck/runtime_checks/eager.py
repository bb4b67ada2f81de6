"""A checked `grad`, `value_and_grad` or `vmap` called outside any trace (eagerly): NaN/Inf (opt-in) and
keys consumed twice.

Eagerly JAX runs each operation as it comes: the forward pass as the user's function runs, the backward
pass as the gradient is pulled back. While a checked call runs in NaN mode, every operation JAX runs
eagerly in that thread (`EvalTrace.process_primitive`, patched for the call's duration only) has its
outputs read: the first one that makes a NaN (else an Inf) out of inputs without one is the origin,
reported at the user's line (the line of the user's function running when it ran; in the backward pass
JAX's own bookkeeping of the line that made the differentiated operation),
forward or backward pass named by JAX's name stack (`transpose` in the backward pass). Nothing runs
twice: the values read are the ones the call computed. A NaN that never reached the outputs (hidden by
`jnp.where`, `max`, ...) is reported too; an Inf only when it reached them.

Keys: an operation (a jitted JAX function such as `jax.random.normal`) that consumes a key array it was
given is tracked in the session's key tracker at the user's line; a key consumed again is JAX401. That
sees keys being mapped or differentiated (`jax.vmap(sample)(keys)`), which reach JAX's operations one by
one, and legacy raw keys (`jax.random.PRNGKey`), which `jax.random` wraps as an operation of its own
before consuming the typed key it made (the raw key is tracked).

A jitted function of the user's that runs as one operation is replayed on that operation's inputs (its
program, as JAX cached it) to name the line inside it.

Bounds: one origin of each kind kept per call; the work per operation is reading its outputs (and its
inputs once one is bad), as `jax_debug_nans` does. Operations JAX runs compiled without `EvalTrace`
(a jitted function called on values that are neither differentiated nor mapped) are not seen: a NaN
they make is reported by the call's outputs, at the function's definition; in a `custom_vjp` backward
rule, at the rule's definition (:mod:`rule_lines` hands its cotangents over).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from types import FrameType
from typing import Any

import jax
from jax._src import core as jax_core
from jax._src import source_info_util

from jaxcheck.runtime_checks import rule_lines
from jaxcheck.runtime_checks.frames import caller_of_jaxcheck, is_library_file, is_user_code
from jaxcheck.runtime_checks.jaxprs import has_tracer
from jaxcheck.runtime_checks.key_reuse import consumed_inputs, is_key
from jaxcheck.runtime_checks.nans import Origin, describe, replayable
from jaxcheck.runtime_checks.replay import Made, bad, first_made
from jaxcheck.runtime_checks.report import diagnostic, display_path
from jaxcheck.runtime_checks.session import current
from jaxcheck.runtime_checks.stale_globals import user_function
from jaxcheck.runtime_checks.traced_body import function_name, guarded, parameter_names

_ORIGINAL: Callable[..., Any] = jax_core.EvalTrace.process_primitive


class Watch:
    """What one checked eager call produced: the first NaN and the first Inf origin (NaN mode), and the
    keys its operations consumed (key reuse)."""

    def __init__(self, call_site: FrameType, nans: bool, keys: bool) -> None:
        self.call_site, self.nans, self.keys = call_site, nans, keys
        self.thread = threading.get_ident()
        self.found: dict[str, Origin] = {}
        self.consumed: set[int] = set()  # ids of the keys this call consumed (the tracker holds them)
        self.raw: dict[int, tuple[Any, Any]] = {}
        """Legacy keys wrapped during the call, by the typed key's id: (typed key, the raw key). `jax.random`
        wraps a raw key as an operation of its own, a new typed key each time: the raw one is tracked."""

    def observe(self, primitive: Any, args: Any, params: dict[str, Any], out: Any) -> None:
        """Track the keys `primitive` consumed; note where it first made a NaN (or an Inf) out of inputs
        without one."""
        if self.keys and primitive.name == "random_wrap" and not has_tracer(args):
            self.raw[id(out)] = (out, args[0])
        if self.keys and primitive.name in ("jit", "pjit") and any(is_key(arg) for arg in args):
            self._track_keys(params["jaxpr"], args)
        if self.nans:
            self._look_for_nans(primitive, args, params, out)

    def _track_keys(self, closed: Any, args: Any) -> None:
        """Report a key this operation consumes that was consumed before (JAX401): a key being mapped or
        differentiated is an array the operation reads directly; keys passed as plain arrays are consumed
        by compiled calls this watch does not see."""
        where = self._line()
        session = current()
        for index in _consumed(closed):
            key = args[index] if index < len(args) else None
            if key is None or isinstance(key, jax.core.Tracer) or not is_key(key) or where is None:
                continue
            key = self.raw.get(id(key), (None, key))[1]
            before = session.keys.track(key, *where)
            if before is None:
                self.consumed.add(id(key))
                continue
            fix = "split it first: `key, sub = jax.random.split(key)`, and use each key once"
            if id(key) in self.consumed:  # twice in this call
                message = (f"a PRNG key consumed on line {before[1]} is consumed again here; both draws give "
                           "the same numbers")
                session.reporter.emit(diagnostic("JAX401", where, message, fix))
            else:  # passed again after an earlier call or use consumed it
                message = (f"a PRNG key passed to this call was already consumed on line {before[1]} of "
                           f"{display_path(before[0])}; reusing it repeats the same random numbers")
                site = (self.call_site.f_code.co_filename, self.call_site.f_lineno)
                session.reporter.emit(diagnostic("JAX401", site, message, fix))

    def _look_for_nans(self, primitive: Any, args: Any, params: dict[str, Any], out: Any) -> None:
        outs = out if primitive.multiple_results else [out]
        for kind in ("NaN", "Inf"):
            if kind not in self.found and any(bad(v, kind) for v in outs) and not any(bad(v, kind) for v in args):
                backward = "transpose" in str(source_info_util.current_name_stack())
                made = _inside_users_jit(params, args, kind, backward) if primitive.name in ("jit", "pjit") else None
                if made is not None:
                    origin = Origin(made.eqn.primitive.name, kind, made.where, made.backward, True, None)
                else:
                    name = params.get("name") if primitive.name in ("jit", "pjit") else None
                    origin = Origin(str(name or primitive.name), kind, self._line(), backward, True, None)
                self.found[kind] = origin

    def _line(self) -> tuple[str, int] | None:
        """The user's line running the operation: the innermost user frame inside the call (the user's
        function or a custom rule), else (JAX pulling a gradient back) the line JAX recorded for it."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame is not self.call_site:
            if is_user_code(frame.f_code):
                return frame.f_code.co_filename, frame.f_lineno
            frame = frame.f_back
        user = source_info_util.user_frame(source_info_util.current().traceback)
        return None if user is None or is_library_file(user.file_name) else (user.file_name, user.start_line)


def _inside_users_jit(params: dict[str, Any], args: Any, kind: str, backward: bool) -> Made | None:
    """Where inside a jitted function of the user's (not JAX's own, whose cached program holds the lines
    of whichever call traced it first) the NaN was made: its program replayed on the operation's inputs."""
    closed = params["jaxpr"]
    source = getattr(closed.jaxpr.debug_info, "func_src_info", None) or ""
    if is_library_file(source.rsplit(" at ", 1)[-1].rsplit(":", 1)[0]) or not replayable(closed.jaxpr):
        return None
    return first_made(closed.jaxpr, closed.consts, args, kind, backward)[0]


_CONSUMED: dict[int, tuple[Any, set[int]]] = {}
"""The inputs each program consumes as keys, by program id (the program held: an id is never reused
while in here); at most :data:`PROGRAMS_KEPT`."""
PROGRAMS_KEPT = 256


def _consumed(closed: Any) -> set[int]:
    """The inputs of `closed` consumed as keys (see :func:`key_reuse.consumed_inputs`), remembered."""
    held = _CONSUMED.get(id(closed))
    if held is not None and held[0] is closed:
        return held[1]
    if len(_CONSUMED) >= PROGRAMS_KEPT:
        _CONSUMED.pop(next(iter(_CONSUMED)))
    found = consumed_inputs(closed)
    _CONSUMED[id(closed)] = (closed, found)
    return found


_WATCHES: list[Watch] = []  # the innermost last; one thread's at a time (the patch is process-wide)
_LOCK = threading.Lock()


def _process_primitive(self: Any, primitive: Any, args: Any, params: dict[str, Any], /) -> Any:
    """JAX's `EvalTrace.process_primitive`, then the innermost watch of this thread observes."""
    out = _ORIGINAL(self, primitive, args, params)
    watches = _WATCHES
    if watches and watches[-1].thread == threading.get_ident():
        guarded(watches[-1].observe, primitive, args, params, out)
    return out


@contextlib.contextmanager
def watching(call_site: FrameType, nans: bool, keys: bool) -> Iterator[Watch]:
    """Watch the operations JAX runs eagerly in this thread inside the block (see the module docstring);
    a block inside another thread's watch watches nothing."""
    watch = Watch(call_site, nans, keys)
    with _LOCK:
        owned = not _WATCHES or _WATCHES[-1].thread == watch.thread
        if owned:
            if not _WATCHES:
                jax_core.EvalTrace.process_primitive = _process_primitive  # type: ignore[method-assign]
            _WATCHES.append(watch)
    if not owned:
        yield watch
        return
    try:
        yield watch
    finally:
        with _LOCK:
            _WATCHES.pop()
            if not _WATCHES:
                jax_core.EvalTrace.process_primitive = _ORIGINAL  # type: ignore[method-assign]


def observe_rule(bwd: Any, args: Sequence[Any], out: Sequence[Any]) -> None:
    """Note a NaN made by a `custom_vjp` backward rule that JAX ran eagerly inside a watched call: its
    operations run compiled on plain arrays, unseen one by one, so the rule is the origin (at its
    definition) when its cotangents hold a NaN its inputs do not."""
    watches = _WATCHES
    if not watches or watches[-1].thread != threading.get_ident() or not watches[-1].nans:
        return
    if "NaN" in watches[-1].found:
        return
    if has_tracer((args, out)) or not any(bad(v, "NaN") for v in jax.tree_util.tree_leaves(out)):
        return
    if any(bad(v, "NaN") for v in jax.tree_util.tree_leaves(args)):
        return
    name, _, place = (getattr(bwd.debug_info, "func_src_info", None) or "").partition(" at ")
    path, _, line = place.rpartition(":")
    where = (path, int(line)) if line.isdigit() and not is_library_file(path) else None
    watches[-1].found["NaN"] = Origin(name or "custom_vjp backward rule", "NaN", where, True, True, None)


def checked_call(transformed: Callable[..., Any], fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 nans: bool, keys: bool) -> Any:
    """`transformed(*args, **kwargs)` (an eager call of a checked `grad`/`vmap` of the user's `fun`) with
    its NaN/Inf origin reported (JAX701) when `nans`, and its keys consumed twice (JAX401) when `keys`."""
    __tracebackhide__ = True
    rule_lines.install(observe_rule)
    with watching(caller_of_jaxcheck(sys._getframe(1)), nans, keys) as watch:
        out = transformed(*args, **kwargs)
    if nans:
        guarded(_report, watch, fun, args, kwargs, out)
    return out


def _report(watch: Watch, fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
    """Report the call's NaN (a NaN made anywhere, or an Inf that reached the outputs) at its origin."""
    reached = [kind for kind in ("NaN", "Inf") if any(bad(v, kind) for v in jax.tree_util.tree_leaves(out))]
    kind = "NaN" if "NaN" in watch.found else next(iter(reached), None)
    if kind is None:
        return
    name = function_name(fun)
    code = getattr(user_function(fun), "__code__", None)
    definition = (code.co_filename, code.co_firstlineno) if code is not None else None
    origin = watch.found.get(kind) or _argument_origin(fun, args, kwargs, kind)
    if origin is None:
        message = f"{kind} in the outputs of `{name}` (not located: made by an operation JAX ran compiled)"
        current().reporter.emit(diagnostic("JAX701", definition, message, "run it under `jax.jit` to locate it"))
        return
    message, fix = describe(replace(origin, masked=kind not in reached), name)
    current().reporter.emit(diagnostic("JAX701", origin.where or definition, message, fix))


def _argument_origin(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], kind: str) -> Origin | None:
    """The origin when an argument of the call already held `kind`."""
    names = parameter_names(fun)
    for position, value in [*enumerate(args), *kwargs.items()]:
        if any(bad(leaf, kind) for leaf in jax.tree_util.tree_leaves(value)):
            name = names[position] if isinstance(position, int) and position < len(names) else str(position)
            return Origin("input", kind, None, False, False, name)
    return None
