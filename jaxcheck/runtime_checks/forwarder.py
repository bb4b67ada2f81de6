"""Generated call wrappers: a forwarder with the wrapped function's own parameter list, so a call costs
one Python frame and no `*args`/`**kwargs` packing in the common case (all parameters required and
positional-or-keyword). Other signatures keep their leading required parameters and forward the rest."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from jaxcheck.runtime_checks.stale_globals import Read, identity_test

_TEMPLATE = """\
def _jc_forwarder({params}):
    __tracebackhide__ = True
    {tick}
    try:
        if _A.instrumented:
            _jc_out = _st.instrumented_call({args}, {kwargs})
        else:
            _jc_out = _call({call})
    except BaseException as _jc_e:
        _st.on_error(_jc_e, {args}, {kwargs})
        raise
    if _st.slow or {changed}:
        _st.after({args}, {kwargs})
    return _jc_out
"""


def _leading_required(fun: Callable[..., Any]) -> tuple[list[str], bool]:
    """Names of the leading required positional-or-keyword parameters, and whether they are all of them.
    Parameters whose names start with `_` end the list: they could shadow the forwarder's globals."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return [], False
    names = []
    for parameter in parameters:
        if parameter.kind is not parameter.POSITIONAL_OR_KEYWORD or parameter.default is not parameter.empty \
                or parameter.name.startswith("_"):  # never shadow the forwarder's own globals
            break
        names.append(parameter.name)
    return names, len(names) == len(parameters)


def make_forwarder(fun: Callable[..., Any], state: Any, active: Any) -> Callable[..., Any]:
    """A function with `fun`'s parameters that calls `state.call` (or `state.instrumented_call` while
    `active.instrumented` is set: NaN or index checks) and then `state.after` when `state.slow` is set (the call traced, or keys are watched) or a
    recorded global changed (see :func:`watch_reads`). A global found changed after a call that did not
    trace was already changed before it: the call used the stale program."""
    names, exact = _leading_required(fun)
    if exact:
        params = call = ", ".join(names)
        args, kwargs = f"({call}{',' if names else ''})", "{}"
    else:
        params = call = ", ".join([*names, "*_jc_args", "**_jc_kwargs"])
        args, kwargs = f"({', '.join([*names, '*_jc_args'])},)", "_jc_kwargs"
    parts = {"params": params, "call": call, "args": args, "kwargs": kwargs}
    namespace: dict[str, Any] = {"_st": state, "_A": active, "_call": state.call, "_jc_parts": parts}
    return _compile(namespace, "False", "pass")


def watch_reads(forwarder: Callable[..., Any], reads: list[Read], clock: list[int]) -> None:
    """Recompile `forwarder` in place (its `__code__`) so that it tests the identity of `reads` and, when
    some of them are watched for in-place changes, counts `clock[0]` down and takes the slow path at 0."""
    namespace = forwarder.__globals__
    changed, tick = identity_test(reads, namespace), "pass"
    if any(read.snapshot is not None for read in reads):
        namespace["_jc_k"] = clock
        changed, tick = f"{changed} or _jc_k[0] <= 0", "_jc_k[0] -= 1"
    forwarder.__code__ = _compile(namespace, changed, tick).__code__


def _compile(namespace: dict[str, Any], changed: str, tick: str) -> Callable[..., Any]:
    source = _TEMPLATE.format(changed=changed, tick=tick, **namespace["_jc_parts"])
    exec(compile(source, "<jaxcheck-forwarder>", "exec"), namespace)  # noqa: S102 - names and reprs only
    return namespace["_jc_forwarder"]  # type: ignore[no-any-return]
