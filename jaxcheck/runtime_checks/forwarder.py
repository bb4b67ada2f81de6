"""What users call in place of a checked `jit`/`pmap` object: a :class:`Forwarder`. It passes its
positional and keyword arguments on exactly as given (keywords stay keywords, so `static_argnums` and
`static_argnames` resolve as for the bare object), runs the slow path only when something happened, and
re-raises the call's exception once, as it came, less jaxcheck's frames (see
:func:`frames.without_own_frames`).

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
from jaxcheck.runtime_checks.session import ACTIVE
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
    return _jc_out
"""


class Forwarder:
    """What users call. The bare object's methods live on the class, as they live on JAX's own jit
    objects' class, so `functools.wraps` (which `jax.jit` applies to a function it wraps) copies none of
    them onto another object; its instance dictionary holds what JAX's holds (metadata, `_fun`,
    `_jit_info`). It binds as a method when it is a class attribute, as JAX's objects do."""

    __slots__ = ("_checked", "_held", "_clock", "__dict__", "__weakref__")

    def __init__(self, checked: Any) -> None:
        self._checked, self._held, self._clock = checked, (), [0]

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
    not trace was already changed before it: the call used the stale program."""
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
    forwarder.__class__ = _class(changed, tick)


@functools.lru_cache(maxsize=256)
def _class(changed: str, tick: str) -> type[Forwarder]:
    """The forwarder class whose `__call__` runs this identity test and clock tick."""
    namespace: dict[str, Any] = {"_A": ACTIVE, "_hide": without_own_frames, **IDENTITY_NAMES}
    source = _TEMPLATE.format(changed=changed, tick=tick)
    exec(compile(source, FORWARDER_FILE, "exec"), namespace)  # noqa: S102 - names and reprs only
    return type("CheckedTransform", (Forwarder,), {"__call__": namespace["__call__"], "__slots__": ()})
