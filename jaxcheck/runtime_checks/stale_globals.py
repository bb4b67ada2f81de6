"""JAX101 at run time: globals and closure cells read while tracing, checked by identity on every call,
and for values that can change in place, by value on calls 2, 4, 8, ... (then every 1024th).

At trace time the function and the user helpers it reaches are scanned for `LOAD_GLOBAL` and free-variable
reads; data values (numbers, strings, arrays, containers) are recorded. Each call runs a generated,
unrolled identity check (`holder.get(name) is not value or ...`), inlined into the forwarder. A change
found on a call that did not retrace is a stale read: the compiled program still holds the old value.

In-place changes (`CONFIG["lr"] = 0.01`, `TABLE[0] = 5`) keep the object, so identity misses them: after
a trace, NumPy arrays (up to 100,000 elements) and config-like containers (dicts, lists, tuples and sets
of numbers, strings, booleans and None, up to 1,000 items) are copied, and compared with what they hold
now on a doubling schedule of calls, which costs nothing per call but a counter decrement. Containers of
other objects (caches, registries) are left alone: what a trace reads from them is not known.
"""

from __future__ import annotations

import dis
import types
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jaxcheck.runtime_checks.frames import is_user_code

_MISSING = object()
_SKIPPED_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


@dataclass(frozen=True)
class Read:
    """A global (`holder` is the module's dict) or a closure cell (`holder` is the cell) read by `name`
    on `line` of `path`, and the value it had while tracing."""

    holder: Any
    name: str
    value: Any
    path: str
    line: int
    snapshot: Any = None
    """A copy of a value that can change in place (see the module docstring), taken after the trace."""

    def now(self) -> Any:
        """The value the name has now (`_MISSING` when deleted)."""
        if isinstance(self.holder, dict):
            return self.holder.get(self.name, _MISSING)
        try:
            return self.holder.cell_contents
        except ValueError:
            return _MISSING


def user_function(fun: Any) -> Any:
    """The user's own function behind `fun`, following bound methods, `functools.partial`, `__wrapped__`
    (so `jax.grad(f)` gives `f`) and callable objects; None when there is none."""
    for _ in range(16):
        code = getattr(fun, "__code__", None)
        if isinstance(code, types.CodeType) and is_user_code(code):
            return fun
        inner = getattr(fun, "__wrapped__", None) or getattr(fun, "__func__", None) or getattr(fun, "func", None)
        if inner is None:
            call = getattr(type(fun), "__call__", None)
            code = getattr(call, "__code__", None)
            return call if isinstance(code, types.CodeType) and is_user_code(code) else None
        fun = inner
    return None


def _is_data(value: Any) -> bool:
    return not isinstance(value, _SKIPPED_TYPES) and not callable(value)


def _reads_of(code: types.CodeType) -> list[tuple[str, str, int]]:
    """`(opname, name, line)` of every global and free-variable read in `code` and its nested code."""
    found = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"):
            line = instruction.positions.lineno if instruction.positions and instruction.positions.lineno else 0
            found.append((instruction.opname, str(instruction.argval), line or code.co_firstlineno))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend((op, name, line) for op, name, line in _reads_of(const) if op != "LOAD_DEREF")
    return found


def record_reads(fun: Any, limit: int = 200) -> list[Read]:
    """The data globals and closure cells `fun` and the user functions it reaches read, with their
    current values (at most `limit` of them)."""
    reads: dict[tuple[int, str], Read] = {}
    queue, visited = [fun], set()
    while queue and len(reads) < limit:
        function = queue.pop()
        function = getattr(function, "__func__", function)
        code = getattr(function, "__code__", None)
        if not isinstance(code, types.CodeType) or code in visited or not is_user_code(code):
            continue
        visited.add(code)
        namespace: dict[str, Any] = getattr(function, "__globals__", {})
        cells = dict(zip(code.co_freevars, getattr(function, "__closure__", None) or ()))
        for opname, name, line in _reads_of(code):
            holder: Any = cells.get(name) if opname == "LOAD_DEREF" else namespace
            if holder is None:
                continue
            read = Read(holder, name, None, code.co_filename, line)
            value = read.now()
            if value is _MISSING:
                continue
            if isinstance(value, types.FunctionType):
                queue.append(value)
            elif _is_data(value):
                reads.setdefault((id(holder), name), Read(holder, name, value, code.co_filename, line))
    return list(reads.values())


_SCALARS = (int, float, complex, str, bytes, bool, type(None))
_COPIED_ARRAY_SIZE = 100_000
_COPIED_ITEMS = 1_000


def with_snapshots(reads: list[Read]) -> list[Read]:
    """`reads` with a copy of each value that can change in place and is worth watching."""
    return [replace(read, snapshot=_snapshot(read.value)) for read in reads]


def _snapshot(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy() if value.size <= _COPIED_ARRAY_SIZE and value.flags.writeable else None
    if isinstance(value, (dict, list, set)) and _config_like(value, [_COPIED_ITEMS]):
        return _copy(value)
    return None


def _config_like(value: Any, budget: list[int]) -> bool:
    """Numbers, strings, booleans and None, in dicts, lists, tuples and sets, at most `budget` items."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, dict):
        return all(_config_like(k, budget) and _config_like(v, budget) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_config_like(item, budget) for item in value)
    return False


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if isinstance(value, set):
        return set(value)
    return value  # tuples of scalars and scalars are immutable


def mutated(reads: list[Read]) -> list[tuple[Read, Any]]:
    """`(read, value now)` for each watched value that is still the same object but holds other data."""
    return [(read, read.value) for read in reads
            if read.snapshot is not None and read.now() is read.value and not same_value(read.snapshot, read.value)]


def identity_test(reads: list[Read], namespace: dict[str, Any]) -> str:
    """A Python expression, true when any recorded value is no longer the same object: one unrolled
    identity comparison per read (tens of nanoseconds per call). The objects it names are put into
    `namespace`, the globals of the code it is compiled into."""
    namespace["_M"], namespace["_cell"] = _MISSING, _cell_contents
    for stale in [key for key in namespace if key[:2] in ("_h", "_v") and key[2:].isdigit()]:
        del namespace[stale]  # release the objects of the previous trace
    terms = []
    for index, read in enumerate(reads):
        namespace[f"_h{index}"], namespace[f"_v{index}"] = read.holder, read.value
        if isinstance(read.holder, dict):
            terms.append(f"_h{index}.get({read.name!r}, _M) is not _v{index}")
        else:
            terms.append(f"_cell(_h{index}) is not _v{index}")
    return " or ".join(terms) or "False"


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def moved(reads: list[Read]) -> bool:
    """True when any name now holds another object than the one recorded."""
    return any(read.now() is not read.value for read in reads)


def changed(reads: list[Read]) -> list[tuple[Read, Any]]:
    """`(read, new value)` for each read whose value now differs (by value, not only identity)."""
    return [(read, new) for read in reads if (new := read.now()) is not read.value and not same_value(read.value, new)]


def same_value(old: Any, new: Any) -> bool:
    """Equal values of the same type: rebinding a name to an equal value is not staleness."""
    if type(old) is not type(new):
        return False
    if hasattr(old, "shape") and hasattr(old, "dtype"):
        same_kind = old.shape == new.shape and old.dtype == new.dtype
        return bool(same_kind and np.array_equal(np.asarray(old), np.asarray(new), equal_nan=old.dtype.kind in "fc"))
    try:
        return bool(old == new)
    except Exception:  # noqa: BLE001 - an object whose == fails is simply not known to be equal
        return False


def short(value: Any) -> str:
    """A short description of a value for messages."""
    if value is _MISSING:
        return "<deleted>"
    if hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "size", 0) > 6:
        return f"an array of shape {tuple(value.shape)} {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
