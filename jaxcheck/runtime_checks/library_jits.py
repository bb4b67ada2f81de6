"""Jits that a library makes for the user's function: `eqx.filter_jit(f)` jits a function of Equinox's own
(`fun_wrapped`) whose arguments are the call's arrays (two dicts) and, as one static argument, everything
else; while JAX traces it, it rebuilds `f` and `f`'s arguments from them and calls `f`. The checked
`jax.jit` checks such a jit as it checks the user's own (JAX's transform of the same function object, so
every trace is JAX's own), and the checks that speak of the user's function (trace history, stale
globals, the name of a reused key) read it and its arguments from the call with :func:`user_call`.

Recognised by the jitted function's code object (Equinox's `fun_wrapped`); nothing is imported here, and
nothing is recognised while Equinox is not imported. `flax.nnx.jit` needs nothing here: the function it
jits wraps the user's (`__wrapped__`). The work is one rebuild of the arguments per trace, and per
reused key reported.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import jax

_EQUINOX_JIT = "equinox._jit"


def is_library_jit(fun: Any) -> bool:
    """True when `fun` is the function a library jits for a user's function (see the module docstring)."""
    module = sys.modules.get(_EQUINOX_JIT)
    code = getattr(fun, "__code__", None)
    return (module is not None and code is not None and code.co_name == "fun_wrapped"
            and code.co_filename == getattr(module, "__file__", None))


def user_call(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) \
        -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None:
    """`(the user's function, its positional arguments, its keyword arguments)` of a call of `fun` with
    `args` and `kwargs` (traced or not), rebuilt as Equinox rebuilds them; None when `fun` is no library
    jit."""
    if not is_library_jit(fun) or kwargs or len(args) != 3:
        return None
    from equinox._compile_utils import hashable_combine  # imported: `fun` is Equinox's

    dynamic = {**args[0], **args[1]}
    static_fun, static_first, static_rest = args[2]
    user = hashable_combine(dynamic["fun"], static_fun)
    first = hashable_combine(dynamic["first"], static_first)
    rest, user_kwargs = hashable_combine(dynamic["rest"], static_rest)
    user_args: tuple[Any, ...] = (first, *tuple(rest))[:-1]  # less the dummy argument Equinox appends
    return user, user_args, dict(user_kwargs)


def argument_path(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], leaf: Any) -> str | None:
    """Where the user's call of a library jit `fun` passed `leaf` (`"key"`, `"state['key']"`); None when it
    is no library jit or `leaf` is not found there."""
    call = user_call(fun, args, kwargs)
    if call is None:
        return None
    user, user_args, user_kwargs = call
    try:
        named = list(inspect.signature(user).bind_partial(*user_args).arguments.items())
    except (TypeError, ValueError):
        named = [(f"args[{i}]", value) for i, value in enumerate(user_args)]
    for name, value in [*named, *user_kwargs.items()]:
        for path, found in jax.tree_util.tree_flatten_with_path(value)[0]:
            if found is leaf:
                return name + jax.tree_util.keystr(path)
    return None
