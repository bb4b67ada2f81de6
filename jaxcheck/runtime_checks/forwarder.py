"""Generated call wrappers: what users call in place of a checked `jit`/`pmap` object. A forwarder
(:class:`Forwarder`) calls a function generated for it; it passes its positional and keyword arguments
on exactly as given (keywords stay keywords, so `static_argnums`
and `static_argnames` resolve as for the bare object), runs the slow path only when something happened,
and re-raises the call's exception once, as it came, less jaxcheck's frames (see
:func:`frames.without_own_frames`). The identity test of the globals the last trace read is compiled
into it (:func:`watch_reads`); compiled code is shared by the forwarders that test as many globals.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from jaxcheck.runtime_checks.frames import FORWARDER_FILE, without_own_frames
from jaxcheck.runtime_checks.stale_globals import Read, identity_test

_TEMPLATE = """\
def _jc_forward(*_jc_args, **_jc_kwargs):
    __tracebackhide__ = True
    {tick}
    try:
        if _A.instrumented:
            _jc_out = _st.instrumented_call(_jc_args, _jc_kwargs)
        else:
            _jc_out = _call(*_jc_args, **_jc_kwargs)
    except BaseException as _jc_e:
        _st.on_error(_jc_e, _jc_args, _jc_kwargs)
        _jc_e.__traceback__ = _hide(_jc_e.__traceback__)
        raise
    if _st.slow or _B.fresh or {changed}:
        _st.after(_jc_args, _jc_kwargs)
    return _jc_out
"""


class Forwarder:
    """What users call. The bare object's methods live on this class, as they live on JAX's own jit
    objects' class, so `functools.wraps` (which `jax.jit` applies to a function it wraps) copies none of
    them onto another object; its instance dictionary holds what JAX's holds (metadata, `_fun`,
    `_jit_info`). It binds as a method when it is a class attribute, as JAX's objects do. It is in no
    reference cycle (the checked function holds it weakly), so it goes, with the function it holds, as
    soon as the user drops it, as JAX's objects do: JAX's caches then forget that function alike."""

    __slots__ = ("_checked", "_forward", "__dict__", "__weakref__")

    def __init__(self, checked: Any, forward: Callable[..., Any]) -> None:
        self._checked, self._forward = checked, forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        try:
            return self._forward(*args, **kwargs)
        except BaseException as error:
            error.__traceback__ = without_own_frames(error.__traceback__)
            raise

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def _bare(self, name: str) -> Any:
        return getattr(self._checked.call, name)  # AttributeError when the bare object has none

    lower = property(lambda self: self._bare("lower"))
    trace = property(lambda self: self._bare("trace"))
    eval_shape = property(lambda self: self._bare("eval_shape"))
    _cache_size = property(lambda self: self._bare("_cache_size") and self._checked.cache_size)
    _cache_miss = property(lambda self: self._bare("_cache_miss"))
    clear_cache = property(lambda self: self._bare("clear_cache") and self._checked.clear_cache)
    _clear_cache = property(lambda self: self._bare("_clear_cache") and self._checked.clear_cache)


def make_forwarder(state: Any, active: Any) -> Forwarder:
    """A forwarder calling `state.call` (or `state.instrumented_call` while `active.instrumented` is set:
    NaN or index checks), then `state.after` when `state.slow` is set (keys are watched), the body traced
    (`state.body.fresh`) or a recorded global changed (see :func:`watch_reads`). A global found changed
    after a call that did not trace was already changed before it: the call used the stale program."""
    namespace: dict[str, Any] = {"_st": state, "_A": active, "_B": state.body, "_call": state.call,
                                 "_hide": without_own_frames}
    return Forwarder(state, types.FunctionType(_code("False", "pass"), namespace, "_jc_forward"))


def watch_reads(forwarder: Forwarder, reads: list[Read], clock: list[int]) -> None:
    """Recompile `forwarder`'s function in place (its `__code__`) so that it tests the identity of `reads`
    and, when some of them are watched for in-place changes, counts `clock[0]` down and takes the slow
    path at 0."""
    call = forwarder._forward
    namespace = call.__globals__
    changed, tick = identity_test(reads, namespace), "pass"
    if any(read.snapshot is not None for read in reads):
        namespace["_jc_k"] = clock
        changed, tick = f"{changed} or _jc_k[0] <= 0", "_jc_k[0] -= 1"
    call.__code__ = _code(changed, tick)


@functools.lru_cache(maxsize=256)
def _code(changed: str, tick: str) -> types.CodeType:
    """The forwarder's code for an identity test and a clock tick (names only: the objects they name are
    in each forwarder's globals)."""
    namespace: dict[str, Any] = {}
    source = _TEMPLATE.format(changed=changed, tick=tick)
    exec(compile(source, FORWARDER_FILE, "exec"), namespace)  # noqa: S102 - names and reprs only
    code: types.CodeType = namespace["_jc_forward"].__code__
    return code
