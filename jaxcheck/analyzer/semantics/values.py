"""Abstract values: what an expression's tracedness depends on.

A value is a set of *dependencies*, each of which may make it a tracer once the project-wide solve
knows which functions are traced and which of their parameters carry tracers:

- :class:`ParamDep` — the value flows from parameter `name` of function `function` (on the paths where
  its guards hold: code under `if p is None:` never runs with `p` traced, nor code under `if flag:` in
  a call that passes `flag=False`);
- :class:`StagedDep` — the value is produced by a JAX array operation inside `function`, which makes it
  a tracer exactly when `function` runs under a transform that stages every operation (jit, pmap, a
  lax body: omnistaging; not vmap alone, which traces only what it maps), in a way that reaches the
  branch the operation sits in;
- :class:`CallDep` — the value is returned by a call to another function of the project, with the
  arguments' dependencies bound to that function's parameters;
- :class:`OpaqueDep` — the value is returned by a call the model cannot see into (another library, a
  method of an unknown object, a callable parameter) given other values: it holds a tracer whenever they
  do, which is enough to report a leak but never to report control flow or a shape.

An empty set means "not known to be traced": literals, shapes, globals, results of calls that take
no traced value.
The model only ever reports values it can prove traced (the pyflakes promise).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import lru_cache
from enum import IntFlag
from typing import Final, Protocol, TypeAlias, Union

from jaxcheck.analyzer.semantics.interning import InternedNode


@dataclass(frozen=True, slots=True)
class ParamDep(InternedNode):
    """The value flows from parameter `name` of `function`. With `unless`, it exists only where those
    parameters of `function` are concrete (after `if isinstance(p, Tracer): raise`); with `absent`, only
    where they are None (under `if p is None:`); with `truthy`, only where they are true (under `if p:`,
    right of `p and`). It is traced only in a call that traces `name`, passes no certain tracer to
    `unless`, no certain non-None value to `absent` and no certain false value (`False`, `None`, `0`, an
    empty literal, or a false default left in place) to `truthy`."""

    function: str
    name: str
    unless: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    truthy: frozenset[str] = frozenset()

    @property
    def guarded(self) -> bool:
        """Whether the value exists only in some calls (it lives in a guarded branch)."""
        return bool(self.unless or self.absent or self.truthy)


@dataclass(frozen=True, slots=True)
class StagedDep(InternedNode):
    """The result of a JAX array operation in `function`: a tracer wherever `function` runs staged.
    With `unless`/`absent`/`truthy` (the operation sits in a guarded branch, as for :class:`ParamDep`),
    only in the staged ways of calling it where those guards hold."""

    function: str
    unless: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    truthy: frozenset[str] = frozenset()

    @property
    def guarded(self) -> bool:
        """Whether the operation runs only in some calls (it sits in a guarded branch)."""
        return bool(self.unless or self.absent or self.truthy)


@dataclass(frozen=True, slots=True)
class OpaqueDep(InternedNode):
    """The result of an opaque call (`optax.global_norm(g)`, `net.apply(w, x)`, `fn(x)`) on values
    with dependencies `inputs`: functions of arrays return arrays, so it holds a tracer whenever an
    input is one. Never traced for `is_traced` (a library may return a Python bool or a shape), only for
    `holds_tracer`, which asks whether storing the value leaks a tracer."""

    inputs: frozenset[Dep]


class Signature(Protocol):
    """A function's parameters, as call arguments bind to them (`FunctionSummary` is one)."""

    @property
    def positional(self) -> tuple[str, ...]: ...
    @property
    def keyword_only(self) -> tuple[str, ...]: ...
    @property
    def var_positional(self) -> str | None: ...
    @property
    def var_keyword(self) -> str | None: ...
    @property
    def parameters(self) -> tuple[str, ...]: ...
    @property
    def falsy_defaults(self) -> frozenset[str]: ...


_UNKNOWN, _PRESENT, _ARRAY, _JAX_ARRAY = 0, 1, 2, 3
"""What an argument is known to be: anything, never None, an array (a tracer whenever traced), or a
JAX array (immutable, traced or not)."""


@dataclass(frozen=True, slots=True)
class CallArguments(InternedNode):
    """The arguments of one call, as dependency sets; `bound_positional` leading parameters are
    already bound (`self` of a method call, arguments given to `functools.partial`).
    `array_positions`/`array_keywords` name the arguments known to be arrays whenever they are
    traced (`JAX_ARRAY` or `ARRAY_VALUED` values: never None, never a container)."""

    positional: tuple[Deps, ...] = ()
    keywords: tuple[tuple[str, Deps], ...] = ()
    bound_positional: int = 0
    has_star: bool = False
    array_positions: frozenset[int] = frozenset()
    array_keywords: frozenset[str] = frozenset()
    present_positions: frozenset[int] = frozenset()
    present_keywords: frozenset[str] = frozenset()
    """The arguments known never to be None (literals, containers, arrays, `x.shape`)."""
    falsy_positions: frozenset[int] = frozenset()
    falsy_keywords: frozenset[str] = frozenset()
    """The arguments known to be false (`False`, `None`, `0`, `""`, an empty literal container)."""
    jax_positions: frozenset[int] = frozenset()
    jax_keywords: frozenset[str] = frozenset()
    """The arguments known to be JAX arrays, traced or not (`jnp.zeros(3)`, `jax.random.normal(k)`)."""
    callables: tuple[tuple[int | str, str, int], ...] = ()
    """Arguments the callee may call or transform, by position or keyword: a function (a `def`, a lambda,
    an imported name), or an instance of a class of this module, as its `__call__`; with the number of
    leading parameters already bound (1 for the instance's `self`)."""

    def all_deps(self) -> tuple[Deps, ...]:
        """The dependencies of every argument, positional then keyword."""
        return (*self.positional, *(deps for _, deps in self.keywords))

    def bind(self, function: Signature) -> dict[str, Deps]:
        """Map `function`'s parameter names to the dependencies of the arguments passed to them; empty
        when the arguments do not fit the signature (too many, an unknown keyword): that call fails."""
        bound: dict[str, Deps] = {}
        for name, _, deps in self._slots(function):
            bound[name] = bound.get(name, frozenset()) | deps
        return bound

    def arrays(self, function: Signature) -> frozenset[str]:
        """The parameters of `function` that receive an array (a tracer whenever traced) from this
        call (`*args` and `**kwargs` excepted: they are containers)."""
        return frozenset(name for name, kind, _ in self._slots(function) if kind >= _ARRAY)

    def jax_arrays(self, function: Signature) -> frozenset[str]:
        """The parameters of `function` that receive a JAX array from this call, traced or not."""
        return frozenset(name for name, kind, _ in self._slots(function) if kind == _JAX_ARRAY)

    def present(self, function: Signature) -> frozenset[str]:
        """The parameters of `function` that receive a value known never to be None from this call."""
        return frozenset(name for name, kind, _ in self._slots(function) if kind != _UNKNOWN)

    def falsy(self, function: Signature) -> frozenset[str]:
        """The parameters of `function` certainly false in this call: given a false literal, or left at a
        false default (nothing after `*args`/`**kwargs` is certain)."""
        params = function.positional[self.bound_positional :]
        given = {params[p] for p in self.falsy_positions if p < len(params)} | set(self.falsy_keywords)
        return frozenset(given | (function.falsy_defaults - self.passed(function)))

    def callable_for(self, parameter: str, function: Signature) -> tuple[str, int] | None:
        """The function (key or qualified name) this call passes to `function`'s `parameter`, if any, and
        how many of its leading parameters are already bound."""
        params = function.positional[self.bound_positional :]
        for slot, target, bound in self.callables:
            if isinstance(slot, int):
                name = params[slot] if slot < len(params) else None
            else:
                name = slot if slot in params or slot in function.keyword_only else None
            if name == parameter:
                return target, bound
        return None

    def _kind(self, position: int | None, keyword: str | None) -> int:
        if position in self.jax_positions or keyword in self.jax_keywords:
            return _JAX_ARRAY
        if position in self.array_positions or keyword in self.array_keywords:
            return _ARRAY
        return _PRESENT if position in self.present_positions or keyword in self.present_keywords else _UNKNOWN

    def _slots(self, function: Signature) -> list[tuple[str, int, Deps]]:
        """(parameter, what the argument is known to be, its dependencies) per argument; empty when
        the arguments do not fit the signature. `*args`/`**kwargs` collect into unknown slots."""
        params = function.positional[self.bound_positional :]
        slots: list[tuple[str, int, Deps]] = []
        for index, deps in enumerate(self.positional):
            if index < len(params):
                slots.append((params[index], self._kind(index, None), deps))
            elif function.var_positional is not None:
                slots.append((function.var_positional, _UNKNOWN, deps))
            else:
                return []
        for name, deps in self.keywords:
            if name in params or name in function.keyword_only:
                slots.append((name, self._kind(None, name), deps))
            elif function.var_keyword is not None:
                slots.append((function.var_keyword, _UNKNOWN, deps))
            else:
                return []
        return slots

    def passed(self, function: Signature) -> frozenset[str]:
        """The parameters of `function` this call gives a value (all of them after `*args`/`**kwargs`)."""
        if self.has_star:
            return frozenset(function.parameters)
        return frozenset(self.bind(function))


@dataclass(frozen=True, slots=True)
class CallDep(InternedNode):
    """The return value of `callee` called from `caller` with `arguments`; with `index`, the element
    at that position of the tuple it returns (`a, b = f(x)`). `unless`/`absent`/`truthy` are the guards of the
    branch the call sits in (see :class:`ParamDep`): the callee runs staged only where they hold."""

    caller: str
    callee: str
    arguments: CallArguments
    index: int | None = None
    unless: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    truthy: frozenset[str] = frozenset()

    @property
    def guarded(self) -> bool:
        """Whether the call sits in a guarded branch (guarding its arguments guards it too)."""
        return bool(self.unless or self.absent or self.truthy)


Dep: TypeAlias = Union[ParamDep, StagedDep, CallDep, OpaqueDep]
Deps: TypeAlias = frozenset[Dep]

NO_DEPS: Deps = frozenset()

class ValueFlag(IntFlag):
    """Facts about a value's Python type that rules need besides tracedness (:attr:`Value.flags`).

    - `BOOL_MASK`: a boolean array (comparison, `jnp.isnan`, `&`/`|`/`~` of masks): indexing with it is
      value-dependent.
    - `PYTHON_CONTAINER`: a Python list, tuple, dict or set (literal, comprehension, `list(...)`,
      `*args`): its truth value is its length (static), and indexing it needs a concrete key.
    - `JAX_ARRAY`: known to be a JAX array, traced or not: the result of a `jax.numpy`/`jax.random`/
      `jax.lax`/`jax.nn` call, of an `.at[...]` update, or of arithmetic, indexing or array methods on a
      JAX array.
    - `LOGGER`: a `logging.Logger` (from `logging.getLogger`).
    - `NUMPY_GENERATOR`: a NumPy random generator (`np.random.default_rng`, `RandomState`): its draws
      are impure.
    - `FILESYSTEM_PATH`: a `pathlib` path: its `write_text`/`write_bytes` methods write files.
    - `ARRAY_VALUED`: the result of arithmetic or an array method on a value that may be traced:
      whenever it is traced it is an array tracer (never None, a string or a container).
    - `PYTHON_SET`: a Python set or frozenset (literal, comprehension, `set(...)`): `-`, `&`, `|` and
      `^` on it give sets.
    - `NUMPY_ARRAY`: a NumPy array made from concrete values (`np.eye(4)`, a module-level
      `np.arange(10)` table): indexing it with a tracer converts the tracer to an integer, which fails
      under a transform.
    - `SEEDED_GENERATOR`: a NumPy generator made with an explicit seed (`np.random.default_rng(0)`,
      `RandomState(seed)`): a fresh one draws the same numbers every time it is made.
    - `KEY_TAKING_LAYER`: an object of a JAX-ecosystem library class (`eqx.nn.Dropout(0.5)`): calling
      it with `key=k` may draw from `k` (a name already known to hold a PRNG key; `key=` is also
      attention's key in `hk.MultiHeadAttention`).
    - `GRADIENT_STOPPED`: the result of `jax.lax.stop_gradient`: under a differentiating transform alone
      it is a plain value (`float()` works on it), though still a tracer under `jit`.
    - `NEW_OBJECT`: an instance of a class of the module made by the code being read (`game = Game(s)`),
      or read from an attribute every store to which puts such an instance there (`self.ball =
      Particle(p)` in a method): it exists from the call that makes it on, so a trace running that
      call made it.

    The model combines and tests these bits on every expression, so it stores them as plain `int`s (the
    module-level names below): `IntFlag`'s operators run in Python. `ValueFlag(value.flags)` names the
    bits of a value (its `repr` lists them)."""

    BOOL_MASK = 1
    PYTHON_CONTAINER = 2
    JAX_ARRAY = 4
    LOGGER = 1 << 8
    NUMPY_GENERATOR = 1 << 9
    FILESYSTEM_PATH = 1 << 10
    ARRAY_VALUED = 1 << 11
    PYTHON_SET = 1 << 12
    NUMPY_ARRAY = 1 << 13
    SEEDED_GENERATOR = 1 << 14
    KEY_TAKING_LAYER = 1 << 15
    GRADIENT_STOPPED = 1 << 16
    NEW_OBJECT = 1 << 17


BOOL_MASK: Final = ValueFlag.BOOL_MASK.value
PYTHON_CONTAINER: Final = ValueFlag.PYTHON_CONTAINER.value
JAX_ARRAY: Final = ValueFlag.JAX_ARRAY.value
LOGGER: Final = ValueFlag.LOGGER.value
NUMPY_GENERATOR: Final = ValueFlag.NUMPY_GENERATOR.value
FILESYSTEM_PATH: Final = ValueFlag.FILESYSTEM_PATH.value
ARRAY_VALUED: Final = ValueFlag.ARRAY_VALUED.value
PYTHON_SET: Final = ValueFlag.PYTHON_SET.value
NUMPY_ARRAY: Final = ValueFlag.NUMPY_ARRAY.value
SEEDED_GENERATOR: Final = ValueFlag.SEEDED_GENERATOR.value
KEY_TAKING_LAYER: Final = ValueFlag.KEY_TAKING_LAYER.value
GRADIENT_STOPPED: Final = ValueFlag.GRADIENT_STOPPED.value
NEW_OBJECT: Final = ValueFlag.NEW_OBJECT.value


Key: TypeAlias = Union[str, int, None]
"""One step into a returned structure: a constant dict key, a constant position, or None for an index
the model cannot read (`params[name]`, `w[i]`)."""


@dataclass(frozen=True, slots=True)
class Returned:
    """Where a value sits in what project function `function` returns: at `path` (`init(k)["enc"]["w"]`
    is `Returned("m.init", ("enc", "w"))`). The function's summary says which paths hold JAX arrays."""

    function: str
    path: tuple[Key, ...] = ()

    def at(self, key: Key) -> Returned:
        """The item at `key` of this value."""
        return Returned(self.function, (*self.path, key))


@dataclass(frozen=True, slots=True)
class Value:
    """The abstract value of one expression: its dependencies, type facts, for literal tuples/lists
    the values of the elements (so `a, b = x, 0` unpacks precisely), for a dict literal with string keys
    the values of its fields, for an object of a class of this module, that class's key
    (`model = MLP(...)`: calling `model(x)` runs `MLP.__call__`), for (part of) a project function's
    return value, where in it the value sits (`returned`), and for an array whose shape is certain on
    every path to here, that shape (`jnp.zeros((2, 3))`: `(2, 3)`; see
    :mod:`jaxcheck.analyzer.semantics.shapes`). A shape is a *must* fact: joins keep it only when both
    sides agree, and anything the model cannot follow (a closure, a `global` write) drops it."""

    deps: Deps = NO_DEPS
    flags: int = 0
    """The :class:`ValueFlag` bits of the value, as a plain int."""
    elements: tuple[Value, ...] | None = None
    instance: str | None = None
    fields: tuple[tuple[str, Value], ...] | None = None
    returned: Returned | None = None
    shape: tuple[int, ...] | None = None

    def __bool__(self) -> bool:
        return (bool(self.deps) or bool(self.flags) or self.instance is not None or self.returned is not None
                or self.shape is not None)

    def joined(self, other: Value) -> Value:
        """The value that may be either `self` or `other` (union of dependencies, common facts; the
        shape only when both have the same one; of two dict literals' fields, those both have, joined)."""
        if other is self:
            return self
        deps = _joined_deps(self.deps, other.deps)
        flags = self.flags & other.flags
        instance = self.instance if self.instance == other.instance else None
        returned = self.returned if self.returned == other.returned else None
        shape = self.shape if self.shape == other.shape else None
        fields = _joined_fields(self.fields, other.fields) if self.fields is not None and other.fields is not None else None
        if deps or flags or instance or returned or shape or fields:
            return Value(deps, flags, instance=instance, fields=fields, returned=returned, shape=shape)
        return UNKNOWN

    def with_field(self, key: str, value: Value) -> Value:
        """This dict literal's value after `d[key] = value` (its other fields unchanged)."""
        assert self.fields is not None
        return replace(self, deps=_joined_deps(self.deps, value.deps), fields=(*self.fields, (key, value)))

    def field(self, key: str) -> Value | None:
        """The value stored under string key `key` of this dict literal, if known (the last one written)."""
        if self.fields is None:
            return None
        return next((value for name, value in reversed(self.fields) if name == key), None)

    def shares_structure(self, other: Value) -> bool:
        """Whether a store through one of these values can change what the other holds: parts of the same
        project function's return value, or one is a field (at any depth) of the other."""
        if self.returned is not None and other.returned is not None and self.returned.function == other.returned.function:
            return True
        return _contains(self, other) or _contains(other, self)

    def without_structure(self) -> Value:
        """This value after an item store may have replaced parts of it (`params["w"] = np.zeros(3)`)."""
        if self.fields is None and self.returned is None:
            return self
        return replace(self, fields=None, returned=None)

    def without_shape(self) -> Value:
        """This value with no shape fact (where the model cannot tell that the binding is still the same)."""
        return self if self.shape is None else replace(self, shape=None)

    def element(self) -> Value:
        """The value of one item obtained by iterating over or indexing this value (a row of a JAX array is
        one)."""
        if self.elements is not None:
            deps = self.deps.union(*(element.deps for element in self.elements))
            return Value(deps) if deps else UNKNOWN
        if self.flags & JAX_ARRAY:
            return Value(self.deps, JAX_ARRAY)
        return Value(self.deps) if self.deps else UNKNOWN


UNKNOWN = Value()


def _joined_fields(first: tuple[tuple[str, Value], ...], second: tuple[tuple[str, Value], ...]
                   ) -> tuple[tuple[str, Value], ...] | None:
    """The fields two dict literals' values both have, each the join of the two (None when none is shared)."""
    theirs = dict(second)
    joined = tuple((key, value.joined(theirs[key])) for key, value in dict(first).items() if key in theirs)
    return joined or None


def _contains(outer: Value, inner: Value) -> bool:
    if outer is inner:
        return True
    return outer.fields is not None and any(_contains(value, inner) for _, value in outer.fields)


def combine(values: list[Value] | tuple[Value, ...], flags: int = 0) -> Value:
    """A value computed from all of `values` (arithmetic, array ops): the union of their deps."""
    deps = NO_DEPS
    for value in values:
        if value.deps:
            deps = deps | value.deps if deps else value.deps
    if not deps and not flags:
        return UNKNOWN
    return Value(deps, flags)


def _joined_deps(first: Deps, second: Deps) -> Deps:
    """The dependencies of a value that may be either: their union, less the guarded ones whose unguarded
    form is there too (after `if flag: ...` without `else`, a parameter is itself again; so is a call's
    result whose arguments were guarded: keeping both forms would double them at every such join)."""
    union = first | second
    if not first or not second:
        return union
    # Guarding a call's arguments guards the call itself, so only opaque calls are looked into.
    redundant = {dep for dep in union if (isinstance(dep, OpaqueDep) or dep.guarded)
                 and (plain := _unguarded(dep)) is not dep and plain in union}
    return union - redundant if redundant else union


@lru_cache(maxsize=1 << 16)
def _unguarded(dep: Dep) -> Dep:
    """`dep` without the guards of any branch, in it or in the arguments it holds (itself when it has none)."""
    if isinstance(dep, (ParamDep, StagedDep)):
        return replace(dep, unless=frozenset(), absent=frozenset(), truthy=frozenset()) if dep.guarded else dep
    if isinstance(dep, OpaqueDep):
        inputs = _unguarded_all(dep.inputs)
        return dep if inputs is dep.inputs else OpaqueDep(inputs)
    arguments = dep.arguments
    positional = tuple(_unguarded_all(deps) for deps in arguments.positional)
    keywords = tuple((name, _unguarded_all(deps)) for name, deps in arguments.keywords)
    plain_arguments = all(a is b for a, b in zip(positional, arguments.positional)) and all(
        a[1] is b[1] for a, b in zip(keywords, arguments.keywords))
    if plain_arguments and not (dep.unless or dep.absent or dep.truthy):
        return dep
    return replace(dep, arguments=replace(arguments, positional=positional, keywords=keywords),
                   unless=frozenset(), absent=frozenset(), truthy=frozenset())


def _unguarded_all(deps: Deps) -> Deps:
    """`deps` with :func:`_unguarded` applied to each (the same object when none is guarded)."""
    plain = [_unguarded(dep) for dep in deps]
    if all(a is b for a, b in zip(plain, deps)):
        return deps
    return frozenset(plain)


def canonical_text(value: object) -> str:
    """A text of `value` (frozen dataclasses, sets, tuples and plain values nested) that is the same in
    every process: `repr` orders a set of strings by hash, which differs between interpreters.

    Cost: an interned node's text is computed once (memoised), and one nested in another stands there
    as a digest of its own text once that is long, so a DAG renders in time and space linear in its
    distinct nodes, however many paths reach a shared one."""
    if isinstance(value, (frozenset, set)):
        return "{" + ",".join(sorted(map(_nested_text, value))) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(map(_nested_text, value)) + ")"
    if isinstance(value, InternedNode):
        return _node_text(value)
    if is_dataclass(value) and not isinstance(value, type):
        inner = ",".join(_nested_text(getattr(value, field.name)) for field in fields(value))
        return f"{type(value).__name__}({inner})"
    return repr(value)


_DIGESTED_TEXT = 96
"""A nested node whose text is longer than this many characters stands in its parent's as a digest."""


def _nested_text(value: object) -> str:
    return _node_reference(value) if isinstance(value, InternedNode) else canonical_text(value)


@lru_cache(maxsize=1 << 18)
def _node_reference(node: InternedNode) -> str:
    """How `node` stands in its parent's text: its own text, or a digest of a long one."""
    text = _node_text(node)
    return text if len(text) <= _DIGESTED_TEXT else "#" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@lru_cache(maxsize=1 << 18)
def _node_text(node: InternedNode) -> str:
    inner = ",".join(_nested_text(getattr(node, field.name)) for field in fields(node))  # type: ignore[arg-type]
    return f"{type(node).__name__}({inner})"


def nested_deps(deps: Deps) -> Iterator[Dep]:
    """`deps` and the dependencies nested in them (the inputs of opaque calls, the arguments of calls),
    each distinct one once: linear in the DAG, however many paths reach a shared node."""
    seen: set[Dep] = set()
    pending = list(deps)
    while pending:
        dep = pending.pop()
        if dep in seen:
            continue
        seen.add(dep)
        yield dep
        pending += inner_deps(dep)


def inner_deps(dep: Dep) -> Iterator[Dep]:
    """The dependencies directly inside `dep`: an opaque call's inputs, a call's arguments."""
    if isinstance(dep, OpaqueDep):
        yield from dep.inputs
    elif isinstance(dep, CallDep):
        for argument in dep.arguments.all_deps():
            yield from argument
