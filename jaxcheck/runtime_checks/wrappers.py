"""The checked transforms: drop-in `jit`, `pmap`, `grad`, `value_and_grad`, `vmap` with JAX's own
signatures. Functions that are not the user's (JAX, installed libraries, the standard library) get
JAX's transform untouched, so patching `jax.jit` never instruments library internals."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from jaxcheck.runtime_checks import leaks, library_jits, originals
from jaxcheck.runtime_checks.checked import checked
from jaxcheck.runtime_checks.eager import checked_call
from jaxcheck.runtime_checks.frames import without_own_frames
from jaxcheck.runtime_checks.jaxprs import has_tracer
from jaxcheck.runtime_checks.session import current
from jaxcheck.runtime_checks.traced_body import function_name, guarded
from jaxcheck.runtime_checks.stale_globals import user_function
from jaxcheck.runtime_checks.tracer_errors import explain

_NOT_GIVEN: Any = object()


def is_users(fun: Any) -> bool:
    """True when `fun` is, or wraps, a function the user wrote (see :func:`frames.is_library_file`)."""
    return user_function(fun) is not None


@functools.wraps(originals.jit)
def jit(fun: Callable[..., Any] = _NOT_GIVEN, /, **options: Any) -> Any:
    """`jax.jit` with the runtime checks."""
    if fun is _NOT_GIVEN:
        return functools.partial(jit, **options)
    if not is_users(fun) and not library_jits.is_library_jit(fun):
        return originals.jit(fun, **options)
    return checked(fun, originals.jit, "jax.jit", (), options)


@functools.wraps(originals.pmap)
def pmap(fun: Callable[..., Any] = _NOT_GIVEN, /, *args: Any, **options: Any) -> Any:
    """`jax.pmap` with the runtime checks and a clear message when the mapped axis exceeds the devices."""
    if fun is _NOT_GIVEN:
        return functools.partial(pmap, *args, **options)
    if not is_users(fun):
        return originals.pmap(fun, *args, **options)
    return checked(fun, originals.pmap, "jax.pmap", args, options)


def _explained(transform: Callable[..., Any], transform_name: str) -> Callable[..., Any]:
    """A checked version of a transform that keeps no cache: tracer errors get their note; called outside
    any trace, its NaN/Inf (NaN mode) and keys consumed twice are reported (see :mod:`eager`)."""

    @functools.wraps(transform)
    def checked_transform(fun: Callable[..., Any], *args: Any, **options: Any) -> Any:
        transformed = transform(fun, *args, **options)
        if not is_users(fun):
            return transformed

        @functools.wraps(transformed)
        def call(*call_args: Any, **call_kwargs: Any) -> Any:
            __tracebackhide__ = True
            watched = guarded(leaks.before_call, function_name(fun), fun, call_args, call_kwargs)
            try:
                settings = current().settings
                if (settings.nans or settings.key_reuse) and not has_tracer((call_args, call_kwargs)):
                    out = checked_call(transformed, fun, call_args, call_kwargs, settings.nans, settings.key_reuse)
                else:
                    out = transformed(*call_args, **call_kwargs)
            except Exception as error:
                found = guarded(explain, error, fun, False, call_args, call_kwargs, transform_name)
                if found is not None:
                    error.add_note(current().reporter.note(found))
                error.__traceback__ = without_own_frames(error.__traceback__)
                raise
            if watched is not None:
                guarded(leaks.after_call, watched)
            return out

        return call

    return checked_transform


grad = _explained(originals.grad, "jax.grad")
value_and_grad = _explained(originals.value_and_grad, "jax.value_and_grad")
vmap = _explained(originals.vmap, "jax.vmap")
