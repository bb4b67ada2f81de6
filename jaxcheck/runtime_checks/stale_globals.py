"""JAX101 at run time: globals and closure cells read while tracing, checked by identity on every call,
and for values that can change in place, by value on calls 2, 4, 8, ... (then every 1024th).

At trace time the function and the user helpers it reaches are scanned for `LOAD_GLOBAL` and free-variable
reads; data values (numbers, strings, arrays, containers) are recorded. Each call runs a generated,
unrolled identity check (`holder.get(name) is not value or ...`), inlined into the forwarder. A change
found on a call that did not retrace is a stale read: the compiled program still holds the old value.

In-place changes (`CONFIG["lr"] = 0.01`, `TABLE[0] = 5`) keep the object, so identity misses them: after
a trace, NumPy arrays (up to 100,000 elements) and config-like containers (dicts, lists, tuples and sets
of numbers, strings, booleans and None, up to 1,000 items) are copied, and compared with what they hold
now on a doubling schedule of calls, which costs nothing per call but a counter decrement. Only what the
bytecode reads is copied: `CONFIG["lr"]` watches that item alone, `BUF.shape` nothing (a shape is
checked by the trace cache itself). Containers of other objects (caches, registries) are left alone.
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
    used: frozenset[Any] | None = None
    """What the code reads of the value: None for all of it, constant items (`CONFIG["lr"]`: `{"lr"}`), or
    nothing but its shape or dtype (an empty set)."""
    snapshot: Any = None
    """A copy of what is read of a value that can change in place, taken after the trace: the value, or
    for constant items a dict of them."""
    traced: Any = _MISSING
    """The value while tracing, once `value` has moved on to a later one a change was reported at (the
    compiled program still holds this one); `_MISSING` while `value` is it."""

    def value_traced(self) -> Any:
        """The value the trace read, which the compiled program holds."""
        return self.value if self.traced is _MISSING else self.traced

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


_PROBES = frozenset({"shape", "dtype", "ndim", "size"})
_WHOLE = object()


def _reads_of(code: types.CodeType) -> list[tuple[str, str, int, Any]]:
    """`(opname, name, line, use)` of every global and free-variable read in `code` and its nested code;
    `use` is a constant item read at once (`CONFIG["lr"]`: `"lr"`), None for a shape or dtype probe, or
    `_WHOLE`."""
    found = []
    instructions = list(dis.get_instructions(code))
    for index, instruction in enumerate(instructions):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"):
            line = instruction.positions.lineno if instruction.positions and instruction.positions.lineno else 0
            use = _use(instructions[index + 1 : index + 3])
            found.append((instruction.opname, str(instruction.argval), line or code.co_firstlineno, use))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(read for read in _reads_of(const) if read[0] != "LOAD_DEREF")
    return found


def _use(following: list[dis.Instruction]) -> Any:
    if following and following[0].opname == "LOAD_ATTR" and following[0].argval in _PROBES:
        return None
    if len(following) == 2 and following[0].opname == "LOAD_CONST" and isinstance(following[0].argval, (str, int)) \
            and (following[1].opname == "BINARY_SUBSCR" or following[1].argrepr == "[]"):
        return following[0].argval
    return _WHOLE


def record_reads(fun: Any, limit: int = 200) -> list[Read]:
    """The data globals and closure cells `fun` and the user functions it reaches read, with their
    current values (at most `limit` of them)."""
    reads: dict[tuple[int, str], Read] = {}
    uses: dict[tuple[int, str], set[Any]] = {}
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
        for opname, name, line, use in _reads_of(code):
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
                if use is not None:
                    uses.setdefault((id(holder), name), set()).add(use)
    return [replace(read, used=_used(uses.get(key, set()))) for key, read in reads.items()]


def _used(uses: set[Any]) -> frozenset[Any] | None:
    return None if _WHOLE in uses else frozenset(uses)


_SCALARS = (int, float, complex, str, bytes, bool, type(None))
_COPIED_ARRAY_SIZE = 100_000
_COPIED_ITEMS = 1_000


def with_snapshots(reads: list[Read]) -> list[Read]:
    """`reads` with a copy of what they read of each value that can change in place."""
    return [replace(read, snapshot=_snapshot_of(read.value, read.used)) for read in reads]


def _snapshot_of(value: Any, used: frozenset[Any] | None) -> Any:
    if used is None:
        return _snapshot(value)
    if not used or not isinstance(value, (dict, list, np.ndarray)):
        return None  # only probed (`BUF.shape`), or items of an object that cannot change in place
    items = {key: _snapshot(_item(value, key)) for key in used}
    return items if any(item is not None for item in items.values()) else None


def _item(value: Any, key: Any) -> Any:
    try:
        item = value[key]
    except (LookupError, TypeError, ValueError):
        return _MISSING
    return item.copy() if isinstance(item, np.ndarray) else item


def _snapshot(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return value
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


def mutated(reads: list[Read]) -> list[tuple[Read, Any, Any]]:
    """`(read, what it read while tracing, what that is now)` for each watched value that is still the same
    object but holds other data where the code reads it."""
    found = []
    for read in reads:
        if read.snapshot is None or read.now() is not read.value:
            continue
        if read.used is None:
            if not same_value(read.snapshot, read.value):
                found.append((read, read.snapshot, read.value))
            continue
        for key, old in read.snapshot.items():
            new = _item(read.value, key)
            if old is not None and not same_value(old, new):
                found.append((replace(read, name=f"{read.name}[{key!r}]"), old, new))
    return found


IDENTITY_NAMES: dict[str, Any] = {}
"""The globals an :func:`identity_test` expression needs besides `_h` (filled below)."""


def identity_test(reads: list[Read]) -> tuple[str, tuple[Any, ...]]:
    """A Python expression, true when any recorded value is no longer the same object: one unrolled
    identity comparison per read (tens of nanoseconds per call), reading the objects from a tuple named
    `_h`; and that tuple. The expression depends only on the names read, so code compiled from it is
    shared by every function that reads the same names."""
    terms, held = [], []
    for index, read in enumerate(reads):
        held += [read.holder, read.value]
        if isinstance(read.holder, dict):
            terms.append(f"_h[{2 * index}].get({read.name!r}, _M) is not _h[{2 * index + 1}]")
        else:
            terms.append(f"_cell(_h[{2 * index}]) is not _h[{2 * index + 1}]")
    return " or ".join(terms) or "False", tuple(held)


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def now_read(read: Read) -> Read:
    """`read` holding the value its name has now (identity tests compare with it), and still the value
    its trace read."""
    return replace(read, value=read.now(), traced=read.value_traced())


def moved(reads: list[Read]) -> bool:
    """True when any name now holds another object than the one recorded."""
    return any(read.now() is not read.value for read in reads)


def changed(reads: list[Read]) -> list[tuple[Read, Any]]:
    """`(read, new value)` for each read whose value moved and now differs (by value, not only identity)
    from the one its trace read; `read.value` is that traced value (a name changed twice is reported with
    the value the compiled program holds, and one changed back to it is not reported)."""
    found = []
    for read in reads:
        new = read.now()
        if new is not read.value and not same_value(read.value, new):
            traced = read.value_traced()
            if not same_value(traced, new):
                found.append((replace(read, value=traced, traced=_MISSING), new))
    return found


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


def change(old: Any, new: Any) -> str:
    """What changed between two versions of a value, briefly: the first differing element of an array."""
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.shape == new.shape:
        differing = np.argwhere(~((old == new) | (np.isnan(old) & np.isnan(new)) if old.dtype.kind in "fc" else old == new))
        if len(differing):
            index = tuple(int(i) for i in differing[0])
            return f"element {list(index)} was {old[index]!r}, now {new[index]!r}"
    return f"now {short(new)}"


def short(value: Any) -> str:
    """A short description of a value for messages."""
    if value is _MISSING:
        return "<deleted>"
    if isinstance(value, np.generic):
        value = value.item()
    if hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "size", 0) > 6:
        return f"an array of shape {tuple(value.shape)} {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


IDENTITY_NAMES.update(_M=_MISSING, _cell=_cell_contents)
