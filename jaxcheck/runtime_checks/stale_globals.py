"""JAX101 at run time: globals and closure cells read while tracing, checked by identity on every call,
and for values that can change in place, by value on calls 2, 4, 8, ... (then every 1024th).

At trace time the function and the user helpers it reaches are scanned for `LOAD_GLOBAL` and free-variable
reads; data values (numbers, strings, arrays, containers) are recorded. Each call runs a generated,
unrolled identity check (`holder.get(name) is not value or ...`), inlined into the forwarder. A change
found on a call that did not retrace is a stale read: the compiled program still holds the old value.

Attributes too: `self.lr` (the object a method is bound to, or a static argument of the caller's),
`cfg.lr` and `cfg.opt.lr` (a global or closure cell holding an object) and `config.LR` (a user's module)
are read while tracing from the `__dict__` of objects, classes and modules of the user's code (never
through a property), at most :data:`ATTRIBUTE_DEPTH` attributes deep and :data:`ATTRIBUTES` attribute
reads per function; each object on the way is watched (`self.cfg` replaced is reported with what its
`lr` was and is). An attribute an object inherits from its class (`lr = 1e-3` in the class body, or a
user base class) is watched where it is found and in the object's own `__dict__`, so either a new class
value or one set on the object later (`model.lr = 0.01`, shadowing the class's) is a change. An
attribute the function also assigns (`self.calls += 1`) and one only probed (`self.buf.shape`) are not
watched.

In-place changes (`CONFIG["lr"] = 0.01`, `TABLE[0] = 5`) keep the object, so identity misses them: after
a trace, NumPy arrays (up to 100,000 elements) and config-like containers (dicts, lists, tuples and sets
of numbers, strings, booleans and None, up to 1,000 items) are copied, and compared with what they hold
now on a doubling schedule of calls, which costs nothing per call but a counter decrement. Only what the
bytecode reads is copied: `CONFIG["lr"]` watches that item alone, `BUF.shape` nothing (a shape is
checked by the trace cache itself). Containers of other objects (caches, registries) are left alone.
"""

from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass, replace
from typing import Any

import jax
import numpy as np

from jaxcheck.runtime_checks.frames import is_library_file, is_user_code

_MISSING = object()
_NAMESPACES = (dict, types.MappingProxyType)
"""Holders read by key: a module's or an object's `__dict__`, a class's (a mapping proxy)."""
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
    label: str = ""
    """How messages name the read when not by `name`: `self.lr` (an attribute; `holder` is the object's
    `__dict__`)."""
    through: tuple[str, ...] = ()
    """The attributes the code reads further from the value (`self.cfg` read for `self.cfg.lr`: `("lr",)`):
    a change is what they lead to."""
    inherited: tuple[Any, ...] = ()
    """For an attribute the object (`holder` is its `__dict__`) inherits: the `__dict__`s of its user classes
    in method resolution order, down to the one holding it, where the value is looked up when the object
    holds none of its own."""

    @property
    def shown(self) -> str:
        """The read as messages name it."""
        return self.label or self.name

    def value_traced(self) -> Any:
        """The value the trace read, which the compiled program holds."""
        return self.value if self.traced is _MISSING else self.traced

    def now(self) -> Any:
        """The value the name has now (`_MISSING` when deleted)."""
        if isinstance(self.holder, _NAMESPACES):
            value = self.holder.get(self.name, _MISSING)
            for owner in self.inherited if value is _MISSING else ():
                value = owner.get(self.name, _MISSING)
                if value is not _MISSING:
                    break
            return value
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


def record_reads(fun: Any, limit: int = 200, objects: dict[str, Any] | None = None) -> list[Read]:
    """The data globals and closure cells `fun` and the user functions it reaches read, and the attributes
    they read of objects (see the module docstring; `objects`: the caller's objects `fun`'s parameters
    hold, by name), with their current values (at most `limit` of them)."""
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
        bases = {"LOAD_FAST": (objects or {}) if len(visited) == 1 else {}, "LOAD_GLOBAL": namespace,
                 "LOAD_NAME": namespace, "LOAD_DEREF": {name: _cell_contents(cell) for name, cell in cells.items()}}
        for read in _attribute_reads(code, bases)[:ATTRIBUTES]:
            reads.setdefault((id(read.holder), read.name), read)
            uses.setdefault((id(read.holder), read.name), set()).update(read.used or {_WHOLE})
    return [replace(read, used=_used(uses.get(key, set()))) for key, read in reads.items()]


ATTRIBUTE_DEPTH = 3
"""Attributes followed in one chain (`self.cfg.opt.lr`)."""
ATTRIBUTES = 32
"""Attribute reads watched per function."""


def callers_objects(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The caller's own objects `fun`'s parameters hold in a trace, by parameter name: the object a method
    is bound to, and the arguments JAX passes as they were given (static ones); not the pytrees of tracers
    JAX builds for the trace."""
    function = getattr(fun, "__func__", fun)
    code = getattr(function, "__code__", None)
    if not isinstance(code, types.CodeType):
        return {}
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    bound = getattr(fun, "__self__", None)
    given = [*(() if bound is None else (bound,)), *args]
    found = {name: value for name, value in zip(names, given)} | {k: v for k, v in kwargs.items() if k in names}
    return {name: value for name, value in found.items() if _attributes(value) is not None and is_callers(value)}


def is_callers(value: Any) -> bool:
    """True for an object of the caller's (no tracer inside it), not one JAX built for a trace."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(value))


def _attributes(value: Any) -> Any:
    """The `__dict__` of a user's object, class or module (a mapping proxy for a class); None for others."""
    if isinstance(value, types.ModuleType):
        path = getattr(value, "__file__", None)
        return value.__dict__ if path is not None and not is_library_file(path) else None
    cls = value if isinstance(value, type) else type(value)
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if path is None or is_library_file(path):
        return None
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None


def _attribute_reads(code: types.CodeType, bases: dict[str, dict[str, Any]]) -> list[Read]:
    """The attribute reads of `code` (`base.a.b`) from the objects `bases` holds (by the opcode that loads
    them, then by name), resolved now; attributes the code also assigns are left out."""
    instructions = list(dis.get_instructions(code))
    assigned = {str(i.argval) for i in instructions if i.opname == "STORE_ATTR"}
    found: list[Read] = []
    for index, instruction in enumerate(instructions):
        base = bases.get(instruction.opname, {}).get(str(instruction.argval), _MISSING)
        if base is _MISSING:
            continue
        chain: list[str] = []
        for following in instructions[index + 1 : index + 1 + ATTRIBUTE_DEPTH + 1]:
            if following.opname != "LOAD_ATTR":
                break
            chain.append(str(following.argval))
        if chain and chain[-1] in _PROBES:
            del chain[-2:]  # an attribute only probed: the trace cache checks shapes and dtypes
        if not chain or len(chain) > ATTRIBUTE_DEPTH or assigned.intersection(chain):
            continue
        line = instruction.positions.lineno if instruction.positions and instruction.positions.lineno else 0
        use = _use(instructions[index + 1 + len(chain) : index + 3 + len(chain)])
        found.extend(_chain_reads(base, str(instruction.argval), chain, use, code.co_filename,
                                  line or code.co_firstlineno))
    return found


def _chain_reads(base: Any, label: str, chain: list[str], use: Any, path: str, line: int) -> list[Read]:
    """One read per attribute of `chain` resolved from `base`, each with the attributes read after it;
    the last one is read for `use` (see :func:`_reads_of`)."""
    reads = []
    value = base
    for depth, attribute in enumerate(chain):
        holder, inherited, value = _attribute(value, attribute)
        if value is _MISSING or not _is_data(value):
            break
        label = f"{label}.{attribute}"
        last = depth == len(chain) - 1
        used = _used({use}) if last and use is not None else None
        reads.append(Read(holder, attribute, value, path, line, used=used, label=label,
                          through=tuple(chain[depth + 1:]), inherited=inherited))
    return reads


def _attribute(value: Any, attribute: str) -> tuple[Any, tuple[Any, ...], Any]:
    """`value.attribute` read from `__dict__`s (no property runs): the `__dict__` of `value` it is read
    from, the class `__dict__`s it is looked up in when `value` holds none of its own (see
    :attr:`Read.inherited`), and the attribute's value (`_MISSING` where there is none)."""
    holder = _attributes(value)
    if holder is None:
        return None, (), _MISSING
    inherited = _inherited_from(value, attribute) if attribute not in holder else ()
    return holder, inherited, Read(holder, attribute, None, "", 0, inherited=inherited).now()


def _inherited_from(value: Any, attribute: str) -> tuple[Any, ...]:
    """The `__dict__`s of the user classes of `value` (an object, not a class or module) in method
    resolution order, down to the first holding `attribute`; () when none does (or a library class
    comes first)."""
    if isinstance(value, (type, types.ModuleType)):
        return ()
    owners = []
    for cls in type(value).__mro__:
        namespace = _attributes(cls)
        if namespace is None:
            return ()
        owners.append(namespace)
        if attribute in namespace:
            return tuple(owners)
    return ()


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
                found.append((replace(read, label=f"{read.shown}[{key!r}]"), old, new))
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
        if read.inherited:  # looked up through the classes when the object holds none of its own
            held[-2] = read
            terms.append(f"_now(_h[{2 * index}]) is not _h[{2 * index + 1}]")
        elif isinstance(read.holder, _NAMESPACES):
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
            if read.through:  # an object on the way to the attribute read: compare what it leads to
                label = ".".join((read.shown, *read.through))
                traced, new = _follow(traced, read.through), _follow(new, read.through)
                read = replace(read, label=label)
            if not same_value(traced, new):
                found.append((replace(read, value=traced, traced=_MISSING), new))
    return found


def _follow(value: Any, attributes: tuple[str, ...]) -> Any:
    """The value `attributes` lead to from `value` (read from `__dict__`s), `_MISSING` where one is not."""
    for attribute in attributes:
        value = _attribute(value, attribute)[2]
    return value


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


IDENTITY_NAMES.update(_M=_MISSING, _cell=_cell_contents, _now=Read.now)
