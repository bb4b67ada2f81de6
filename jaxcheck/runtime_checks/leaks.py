"""JAX102 at run time: a traced value stored where it outlives its trace, reported at the store.

When a checked function's trace ends (still inside JAX's trace), the places its code can reach are
searched for tracers of that trace or of a transform inside it (`remat`, `grad`, `vmap`: a tracer whose
trace's parents lead to this trace): the globals and closure cells the function and the user functions
it calls name, the object a method is bound to, and the arguments that are the caller's own objects
(static ones, not the pytrees of tracers JAX builds for the trace); from each, at
most :data:`DEPTH` steps through lists, tuples, dicts, sets, object and class attributes, closures and
partials, at most :data:`OBJECTS` objects in all and :data:`ITEMS` items per container. A tracer found
there can only be a leak (JAX's `checking_leaks` reports it too); using it later raises
`UnexpectedTracerError`. A `grad`, `value_and_grad` or `vmap` called with no cache (outside `jit`) is
searched the same way after the call, for tracers that were not there before it and whose trace has
ended, when the code of the function or of a user function it names stores outside its locals (known
per function object, computed once from the helpers it names then: a function whose code reaches no
store costs a lookup per call).

The store is the instruction of that code that writes where the tracer was found: `STORE_ATTR` of the
attribute holding it (`self.cache = h`), `STORE_GLOBAL`/`STORE_DEREF` of the name, a call of
`append`/`extend`/`insert`/`add`/`update`/`setdefault`/`appendleft` on the container holding it, or an
item assignment to it (a tracer captured by a stored closure: the store of the closure), at any step
of the way (`self.last = box` leaks `box.value`). Reported only when exactly one line of the code stores
there; otherwise nothing is said (the error's note, see :mod:`tracer_errors`, still names the line that
used the leaked value). Nothing is traced or called again: attributes are read from `__dict__` (no
property runs), containers through their base class, and only objects and closures of the user's code
are looked into.
"""

from __future__ import annotations

import dis
import functools
import sys
import types
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax._src import core

from jaxcheck.runtime_checks.frames import is_library_file, is_user_code
from jaxcheck.runtime_checks.report import diagnostic
from jaxcheck.runtime_checks.session import current
from jaxcheck.runtime_checks.stale_globals import is_callers, user_function

DEPTH = 4
"""Steps searched from a root (`self.history[0]` is two)."""
OBJECTS = 2_000
"""Objects visited per trace, roots included."""
ITEMS = 1_000
"""Items looked at per container (the last ones: appended values are at the end)."""
FUNCTIONS = 32
"""User functions whose code is searched for roots and stores per trace."""
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "__setitem__"})
_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_FAST", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD",
                    "LOAD_CLASSDEREF"})
_LEAVES = (types.ModuleType, str, bytes, int, float, complex, bool, type(None), np.ndarray, jax.Array)


@dataclass(frozen=True)
class Leak:
    """A tracer found at `place` (`self.history[0]`), stored on `line` of `path`."""

    place: str
    type: str
    path: str
    line: int


def current_trace() -> Any:
    """The trace JAX is running now (the one a checked function is being traced under)."""
    return core.trace_ctx.trace


def leaks(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], leaked: Callable[[Any], bool]) -> list[Leak]:
    """The tracers (those `leaked` accepts) that `fun`'s code stored where they outlive their trace, each
    with its store line when one line alone can have stored it."""
    codes = _codes(fun)
    found: list[Leak] = []
    seen_places: set[str] = set()
    reported = {id(tracer) for reference, _ in _STORES if (tracer := reference()) is not None}
    for place, steps, tracer in _tracers(_roots(fun, codes, args, kwargs), leaked):
        where = _store_line(codes, steps)
        if where is not None and place not in seen_places and id(tracer) not in reported:
            seen_places.add(place)
            found.append(Leak(place, tracer.aval.str_short(), *where))
            _STORES.append((weakref.ref(tracer), where))
    return found


FIX = "return the value instead of storing it in outer state (a global, a list, `self`)"
STORES_KEPT = 256
"""Leaks whose store line is kept for the note on a later `UnexpectedTracerError` (the tracer held weakly)."""
_STORES: deque[tuple[Callable[[], Any], tuple[str, int]]] = deque(maxlen=STORES_KEPT)


def report(name: str, fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], trace: Any) -> None:
    """Report the leaks of `fun`'s trace just ended (see the module docstring); each is kept for
    :func:`stored_at`."""
    _emit(name, leaks(fun, args, kwargs, lambda tracer: _inside(tracer, trace)))


def _emit(name: str, found: list[Leak]) -> None:
    for leak in found:
        message = (f"`{name}` stored a traced value ({leak.type}) in `{leak.place}` while tracing; it outlives "
                   "the trace, and using it later raises UnexpectedTracerError")
        current().reporter.emit(diagnostic("JAX102", (leak.path, leak.line), message, FIX))


@dataclass(frozen=True)
class Watched:
    """A call of an uncached transform (`grad`, `vmap`) of `fun` whose code stores outside itself, and
    the tracers reachable before it (held, so that their ids stay theirs)."""

    name: str
    fun: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    before: tuple[Any, ...]


def before_call(name: str, fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Watched | None:
    """What :func:`after_call` needs to find the leaks of a call of an uncached transform of `fun`; None
    (nothing to do) when neither the code of `fun` nor that of the user functions it names stores
    anywhere but in its locals (see :func:`_reaches_store`)."""
    fun = user_function(fun)
    if fun is None or not _reaches_store(getattr(fun, "__func__", fun)):
        return None
    roots = _roots(fun, _codes(fun), args, kwargs)
    return Watched(name, fun, args, kwargs, tuple(tracer for _, _, tracer in _tracers(roots, lambda _: True)))


def after_call(watched: Watched) -> None:
    """Report the tracers the call left where its function's code stores: new since :func:`before_call`
    and of a trace that has ended (not the one running now, nor one of its parents)."""
    known = {id(tracer) for tracer in watched.before}
    live, trace = set(), core.trace_ctx.trace
    for _ in range(64):
        if trace is None:
            break
        live.add(id(trace))
        trace = getattr(trace, "parent_trace", None)
    _emit(watched.name, leaks(watched.fun, watched.args, watched.kwargs,
                              lambda tracer: id(tracer) not in known and id(getattr(tracer, "_trace", None)) not in live))


_REACHES_STORE: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _reaches_store(function: Any) -> bool:
    """True when the code of `function` or of the user functions it names (see :func:`_codes`, as they are
    named the first time it is asked) can store outside its locals; remembered per function object."""
    found = _REACHES_STORE.get(function)
    if found is None:
        found = _REACHES_STORE[function] = any(_stores_outside(code) for code, _ in _codes(function))
    return found


@functools.lru_cache(maxsize=1024)
def _stores_outside(code: types.CodeType) -> bool:
    """True when `code` (or code nested in it) can store outside its locals: a global, a closure cell, an
    attribute, an item, or a mutating method call."""
    return any(instruction.opname in ("STORE_GLOBAL", "STORE_DEREF", "STORE_ATTR", "STORE_SUBSCR")
               or (instruction.opname in ("LOAD_METHOD", "LOAD_ATTR") and instruction.argval in MUTATORS)
               for inner in _nested(code) for instruction in dis.get_instructions(inner))


def stored_at(error: BaseException) -> tuple[str, int] | None:
    """Where the leaked value of an `UnexpectedTracerError` was stored, when a trace reported the store:
    the kept tracers whose error JAX would word the same way (same type, function, creation line) all
    stored on one line."""
    text = _leak_text(str(error))
    lines = {where for reference, where in list(_STORES)
             if (tracer := reference()) is not None and _leak_text(str(_error_for(tracer))) == text}
    return lines.pop() if len(lines) == 1 else None


_error_for: Callable[[Any], BaseException] = core.escaped_tracer_error
"""The `UnexpectedTracerError` JAX raises for a tracer (untyped in JAX)."""


def _leak_text(message: str) -> str:
    return message.split("To catch the leak earlier")[0]


# -- where to look -------------------------------------------------------------------------------
def _codes(fun: Any) -> list[tuple[types.CodeType, Any]]:
    """`(code, function)` of `fun`, its nested code and the user functions it names (globals and cells),
    at most :data:`FUNCTIONS` functions."""
    found: list[tuple[types.CodeType, Any]] = []
    pending: list[Any] = [getattr(fun, "__func__", fun)]
    visited: set[types.CodeType] = set()
    while pending and len(visited) < FUNCTIONS:
        function = pending.pop()
        code = getattr(function, "__code__", None)
        if not isinstance(code, types.CodeType) or code in visited or not is_user_code(code):
            continue
        visited.add(code)
        for inner in _nested(code):
            found.append((inner, function))
            for _, value in _named_values(inner, function):
                if isinstance(value, types.FunctionType):
                    pending.append(value)
    return found


def _nested(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested(const)


def _named_values(code: types.CodeType, function: Any) -> Iterator[tuple[str, Any]]:
    """The globals and closure cells `code` names, as `(name, value)`."""
    namespace = getattr(function, "__globals__", {})
    cells = dict(zip(function.__code__.co_freevars, getattr(function, "__closure__", None) or ()))
    for instruction in dis.get_instructions(code):
        name = str(instruction.argval)
        if instruction.opname in ("LOAD_GLOBAL", "STORE_GLOBAL") and name in namespace:
            yield name, namespace[name]
        elif instruction.opname in ("LOAD_DEREF", "STORE_DEREF") and name in cells:
            try:
                yield name, cells[name].cell_contents
            except ValueError:
                continue


def _roots(fun: Any, codes: list[tuple[types.CodeType, Any]], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> list[tuple[str, tuple[tuple[str, str], ...], Any]]:
    """`(display name, steps, object)` of the places to search from."""
    roots: dict[int, tuple[str, tuple[tuple[str, str], ...], Any]] = {}
    bound = getattr(fun, "__self__", None)
    if bound is not None and _persists(bound):
        roots[id(bound)] = ("self", (("name", "self"),), bound)
    for code, function in codes:
        for name, value in _named_values(code, function):
            roots.setdefault(id(value), (name, (("name", name),), value))
    for index, value in [*enumerate(args), *kwargs.items()]:
        if _persists(value):
            roots.setdefault(id(value), (f"argument {index!r}", (("name", str(index)),), value))
    return list(roots.values())


def _persists(value: Any) -> bool:
    """True for an argument that is the caller's own object (a static argument, the bound object), not
    one JAX built for the trace (a pytree of tracers: its tracers are inputs, not leaks)."""
    return not isinstance(value, _LEAVES) and is_callers(value)


def _tracers(roots: list[tuple[str, tuple[tuple[str, str], ...], Any]], leaked: Callable[[Any], bool]) \
        -> Iterator[tuple[str, tuple[tuple[str, str], ...], Any]]:
    """`(place, steps, tracer)` for each tracer `leaked` accepts reachable from `roots` (breadth first,
    within the bounds of the module docstring)."""
    queue = deque((name, steps, value, 0) for name, steps, value in roots)
    visited: set[int] = set()
    while queue and len(visited) < OBJECTS:
        place, steps, value, depth = queue.popleft()
        if id(value) in visited:
            continue
        visited.add(id(value))
        if isinstance(value, jax.core.Tracer):
            if leaked(value):
                yield place, steps, value
            continue
        if depth >= DEPTH:
            continue
        for text, step, child in _children(value):
            queue.append((place + text, (*steps, step), child, depth + 1))


def _inside(tracer: Any, trace: Any) -> bool:
    """True when `tracer` belongs to `trace` or to a trace started inside it."""
    current = getattr(tracer, "_trace", None)
    for _ in range(64):
        if current is None:
            return False
        if current is trace:
            return True
        current = getattr(current, "parent_trace", None)
    return False


def _children(value: Any) -> list[tuple[str, tuple[str, str], Any]]:
    """`(text, step, child)` of what `value` holds; a step is `(kind, name)`: `attr`, `item` (of a
    mutable container named by the step before), `part` (of a tuple or frozen set: stored with it),
    `closure` (a cell of a function: stored with it). Containers are read through their base class (an
    override of `items` or `__iter__` is not called); only objects, classes and closures of the user's
    code are looked into."""
    if isinstance(value, _LEAVES):
        return []
    if isinstance(value, (list, deque)):
        items = list.copy(value) if isinstance(value, list) else list(deque.__iter__(value))
        start = max(0, len(items) - ITEMS)
        return [(f"[{start + i}]", ("item", ""), item) for i, item in enumerate(items[start:])]
    if isinstance(value, tuple):
        return [(f"[{i}]", ("part", ""), item) for i, item in enumerate(list(tuple.__iter__(value))[:ITEMS])]
    if isinstance(value, dict):
        return [(f"[{key!r}]", ("item", ""), item) for key, item in list(dict.items(value))[-ITEMS:]]
    if isinstance(value, (set, frozenset)):
        kind = "item" if isinstance(value, set) else "part"
        members = set.__iter__(value) if isinstance(value, set) else frozenset.__iter__(value)
        return [("{...}", (kind, ""), item) for item in list(members)[:ITEMS]]
    if isinstance(value, types.FunctionType):
        if not is_user_code(value.__code__):
            return []
        cells = zip(value.__code__.co_freevars, value.__closure__ or ())
        return [(f" (closing over `{name}`)", ("closure", name), cell.cell_contents) for name, cell in cells
                if _has_contents(cell)]
    if isinstance(value, functools.partial):
        return [("<partial>", ("part", ""), item) for item in (*value.args, *value.keywords.values())]
    if not _users_class(value if isinstance(value, type) else type(value)):
        return []
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return []
    return [(f".{name}", ("attr", name), item) for name, item in list(dict.items(dict(attributes)))[:ITEMS]
            if not (isinstance(name, str) and name.startswith("__"))]


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _users_class(cls: type) -> bool:
    """True for a class the user defined (in a user's module); library classes are not searched."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    return path is not None and not is_library_file(path)


# -- which line stored it ------------------------------------------------------------------------
def _store_line(codes: list[tuple[types.CodeType, Any]], steps: tuple[tuple[str, str], ...]) -> tuple[str, int] | None:
    """The one line of `codes` that can have stored what `steps` lead to (a store into any place along
    the way: `self.last = model` leaks `model.w`); None when none or several."""
    lines = {(code.co_filename, line) for code, _ in codes for end in range(1, len(steps) + 1)
             for line in _stores(code, steps[:end])}
    return lines.pop() if len(lines) == 1 else None


def _stores(code: types.CodeType, steps: tuple[tuple[str, str], ...]) -> Iterator[int]:
    """Lines of `code` that store into the place `steps` lead to (nothing for a tuple's part or a
    closure's cell: those are stored with their holder)."""
    kind, name = steps[-1]
    instructions = list(dis.get_instructions(code))
    if kind == "item":  # an item of a container: the container's name is the step before
        container_name = steps[-2][1] if len(steps) > 1 and steps[-2][0] in ("name", "attr") else None
        for index, instruction in enumerate(instructions):
            if container_name is None or instruction.opname not in _LOADS or instruction.argval != container_name:
                continue
            following = instructions[index + 1 : index + 3]
            if following and following[0].opname in ("LOAD_METHOD", "LOAD_ATTR") and following[0].argval in MUTATORS:
                yield _line(instruction, code)
            elif len(following) == 2 and following[1].opname == "STORE_SUBSCR":
                yield _line(instruction, code)
        return
    wanted = {"attr": ("STORE_ATTR",), "name": ("STORE_GLOBAL", "STORE_DEREF", "STORE_NAME")}.get(kind, ())
    for instruction in instructions:
        if instruction.opname in wanted and instruction.argval == name:
            yield _line(instruction, code)


def _line(instruction: dis.Instruction, code: types.CodeType) -> int:
    return instruction.positions.lineno if instruction.positions and instruction.positions.lineno \
        else code.co_firstlineno
