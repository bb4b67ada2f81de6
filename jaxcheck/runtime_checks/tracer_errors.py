"""Tracer errors explained: JAX's own exception, same type, plus a note with the jaxcheck code, the
argument that made the value traced, the user's line and a fix that was verified where it can be.

When the caller passed a Python scalar for that argument to a transform with static arguments (`jit`),
the note suggests `static_argnames`. An `UnexpectedTracerError` whose value a trace was seen storing
(see :mod:`leaks`) names the store's line. Nothing is traced again to explain an error.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import jax

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.runtime_checks.frames import traceback_user_frame
from jaxcheck.runtime_checks.leaks import FIX as LEAK_FIX
from jaxcheck.runtime_checks.leaks import stored_at
from jaxcheck.runtime_checks.report import diagnostic, display_path
from jaxcheck.runtime_checks.stale_globals import user_function

_ARGUMENT = re.compile(r"argument '?([A-Za-z_][A-Za-z0-9_]*)'?")
_SHAPE_ERROR = re.compile(r"Shapes must be|shape argument|dynamic_shapes|size argument|concrete size")
_FIXES = {
    "JAX301": "use `jnp.where(...)`, `jax.lax.cond(...)` or `jax.lax.while_loop(...)` instead of Python control flow",
    "JAX302": "keep the value an array (use `jnp` functions, not `int()`/`float()`/NumPy), or make it static",
    "JAX303": "give the result a static size (`jnp.nonzero(x, size=...)`) or use `jnp.where(mask, x, 0)`",
    "JAX102": LEAK_FIX,
}


def code_of_error(error: BaseException) -> str | None:
    """The jaxcheck code of a JAX tracer error, None for other exceptions."""
    errors = jax.errors
    if isinstance(error, errors.UnexpectedTracerError):
        return "JAX102"
    if isinstance(error, errors.NonConcreteBooleanIndexError):
        return "JAX303"
    if isinstance(error, (errors.TracerBoolConversionError,)):
        return "JAX301"
    if isinstance(error, (errors.TracerIntegerConversionError, errors.TracerArrayConversionError)):
        return "JAX302"
    if isinstance(error, errors.ConcretizationTypeError):
        return "JAX303" if _SHAPE_ERROR.search(str(error)) else "JAX302"
    return None


def traced_argument(error: BaseException) -> str | None:
    """The argument JAX names as the source of the traced value, if it names one."""
    match = _ARGUMENT.search(str(error))
    return match.group(1) if match else None


def explain(error: BaseException, fun: Callable[..., Any], has_static: bool, args: tuple[Any, ...],
            kwargs: dict[str, Any], transform: str) -> Diagnostic | None:
    """The diagnostic for a tracer `error` raised by `transform(fun)(*args, **kwargs)`, or None when
    `error` is not a tracer error. `has_static`: the transform takes static arguments."""
    code = code_of_error(error)
    if code is None:
        return None
    name = traced_argument(error)
    if name and name not in _parameters(fun):
        name = None  # a name of JAX's own wrapper (pmap's `flat_args`), not the user's argument
    value = _argument_value(fun, name, args, kwargs) if name else None
    fix = _FIXES[code]
    if name and isinstance(value, (bool, int, float, complex, str)) and has_static:
        short = getattr(fun, "__name__", "f")
        fix = f"mark it static: `jax.jit({short}, static_argnames=({name!r},))`"
    origin = f"; the traced value comes from the argument {name!r}" if name else ""
    passed = f" (called with {value!r})" if isinstance(value, (bool, int, float, complex, str)) else ""
    stored = stored_at(error) if code == "JAX102" else None
    leaked = f"; the leaked value was stored on line {stored[1]} of {display_path(stored[0])}" if stored else ""
    message = f"{type(error).__name__} in `{_name(fun)}` under {transform}{origin}{passed}{leaked}"
    where = traceback_user_frame(error.__traceback__) or _definition(fun)
    return diagnostic(code, where, message, fix)


def _definition(fun: Callable[..., Any]) -> tuple[str, int] | None:
    """Where the user's function behind `fun` is defined (errors raised after its trace have no user frame)."""
    code = getattr(user_function(fun), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _name(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__


def _parameters(fun: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return set()


def _argument_value(fun: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    return bound.arguments.get(name)
