"""What users call in place of a checked `jit`/`pmap` object: a :class:`Forwarder`. It passes its
positional and keyword arguments on exactly as given (keywords stay keywords, so `static_argnums` and
`static_argnames` resolve as for the bare object), runs the slow path only when something happened, and
re-raises the call's exception once, as it came, less jaxcheck's frames (see
:func:`frames.without_own_frames`).

A forwarder with nothing to check per call is *quiet*: its class (:func:`quiet_class`, one per checked
function) has a `functools.partial` of the bare object as its `__call__`, so a call runs no Python code
of jaxcheck's at all (a Python `__call__` alone costs about 0.7 us, a tenth of a tiny jitted call). The
forwarder is no partial itself: JAX and Flax treat a partial's signature as opaque. A jitted function
goes quiet after :data:`QUIET_AFTER` calls that left nothing to do: no keys watched, no globals
recorded, no NaN or index checks on. It wakes (its class becomes a generated one again) when its body
traces (:meth:`traced_body.Body.run` records what the trace read), and when a session turns NaN or index
checks on (:func:`session.activate`). What a quiet call that traces leaves (the program's keys) is read
by the next call, from JAX's cache.

Its `__call__` is generated: the identity test of the globals the last trace read is compiled into it
(:func:`watch_reads`). Generated classes are shared by every forwarder whose test reads the same names
(the objects compared are held by the forwarder), so a forwarder is in no reference cycle and goes as
soon as the user drops it, with the function it holds, as JAX's own objects do.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, cast

from jaxcheck.runtime_checks.frames import FORWARDER_FILE, without_own_frames
from jaxcheck.runtime_checks.session import ACTIVE, QUIET
from jaxcheck.runtime_checks.stale_globals import IDENTITY_NAMES, Read, identity_test

_TEMPLATE = """\
def __call__(_jc_self, *_jc_args, **_jc_kwargs):
    __tracebackhide__ = True
    _st = _jc_self._checked
    _h = _jc_self._held
    {tick}
    try:
        if _A.instrumented:
            _jc_out = _st.instrumented_call(_jc_args, _jc_kwargs)
        else:
            _jc_out = _st.call(*_jc_args, **_jc_kwargs)
    except BaseException as _jc_e:
        _st.on_error(_jc_e, _jc_args, _jc_kwargs)
        _jc_e.__traceback__ = _hide(_jc_e.__traceback__)
        raise
    if _st.slow or _st.body.fresh or {changed}:
        _st.after(_jc_args, _jc_kwargs)
    {settle}
    return _jc_out
"""
_SETTLE = """if _st.may_go_quiet and not (_A.instrumented or _st.slow or _st.body.fresh or _st.body.reads):
        _jc_self._settle()"""
QUIET_AFTER = 2
"""Calls that leave nothing to do before a forwarder goes quiet (`jax.jit(f)(x)`, one call per jit object
made in a loop, makes no class)."""


class Forwarder:
    """What users call. The bare object's methods live on the class, as they live on JAX's own jit
    objects' class, so `functools.wraps` (which `jax.jit` applies to a function it wraps) copies none of
    them onto another object; its instance dictionary holds what JAX's holds (metadata, `_fun`,
    `_jit_info`). It binds as a method when it is a class attribute, as JAX's objects do."""

    __slots__ = ("_checked", "_held", "_clock", "__dict__", "__weakref__")

    def __init__(self, checked: Any) -> None:
        self._checked, self._held, self._clock = checked, (), [0]

    def __repr__(self) -> str:
        return repr(self._checked.call)

    def _settle(self) -> None:
        """A call left nothing to do (the caller checked): at the :data:`QUIET_AFTER`-th, call the bare
        object directly from now on."""
        state = self._checked
        state.clean_calls += 1
        if state.clean_calls >= QUIET_AFTER:
            self.__class__ = quiet_class(state)
            QUIET.add(self)

    def wake(self) -> None:
        """Take the slow path on the next call again (a quiet forwarder has no globals to test)."""
        if type(self) is self._checked.quiet_class:
            self.__class__ = _class("False", "pass")
        QUIET.discard(self)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else types.MethodType(cast(Callable[..., Any], self), instance)

    def _bare(self, name: str) -> Any:
        return getattr(self._checked.call, name)  # AttributeError when the bare object has none

    lower = property(lambda self: self._bare("lower"))
    trace = property(lambda self: self._bare("trace"))
    eval_shape = property(lambda self: self._bare("eval_shape"))
    _cache_size = property(lambda self: self._bare("_cache_size") and self._checked.cache_size)
    _cache_miss = property(lambda self: self._bare("_cache_miss"))
    clear_cache = property(lambda self: self._bare("clear_cache") and self._checked.clear_cache)
    _clear_cache = property(lambda self: self._bare("_clear_cache") and self._checked.clear_cache)


def make_forwarder(state: Any) -> Forwarder:
    """A forwarder calling `state.call` (or `state.instrumented_call` while NaN or index checks are on),
    then `state.after` when `state.slow` is set (keys are watched), the body traced (`state.body.fresh`)
    or a recorded global changed (see :func:`watch_reads`). A global found changed after a call that did
    not trace was already changed before it: the call used the stale program. It goes quiet when
    `state.may_go_quiet` and a call leaves nothing to do."""
    forwarder: Forwarder = _class("False", "pass")(state)
    return forwarder


def watch_reads(forwarder: Forwarder, reads: list[Read], clock: list[int]) -> None:
    """Make `forwarder` test the identity of `reads` on every call and, when some of them are watched for
    in-place changes, count `clock[0]` down and take the slow path at 0 (its class changes to the one
    generated for that test)."""
    changed, forwarder._held = identity_test(reads)
    tick = "pass"
    if any(read.snapshot is not None for read in reads):
        forwarder._clock = clock
        changed, tick = f"{changed} or _jc_self._clock[0] <= 0", "_jc_self._clock[0] -= 1"
    QUIET.discard(forwarder)
    forwarder.__class__ = _class(changed, tick)


def quiet_class(state: Any) -> type[Forwarder]:
    """The quiet class of `state`'s forwarder: made once per checked function, held by it (it holds the
    bare object, never the forwarder, so it is in no reference cycle with the forwarder)."""
    made: type[Forwarder] | None = state.quiet_class
    if made is None:
        call = functools.partial(state.call)  # not a descriptor: called without the forwarder
        made = state.quiet_class = type("CheckedTransform", (Forwarder,), {"__call__": call, "__slots__": ()})
    return made


@functools.lru_cache(maxsize=256)
def _class(changed: str, tick: str) -> type[Forwarder]:
    """The forwarder class whose `__call__` runs this identity test and clock tick."""
    namespace: dict[str, Any] = {"_A": ACTIVE, "_hide": without_own_frames, **IDENTITY_NAMES}
    source = _TEMPLATE.format(changed=changed, tick=tick, settle=_SETTLE if changed == "False" else "")
    exec(compile(source, FORWARDER_FILE, "exec"), namespace)  # noqa: S102 - names and reprs only
    return type("CheckedTransform", (Forwarder,), {"__call__": namespace["__call__"], "__slots__": ()})
