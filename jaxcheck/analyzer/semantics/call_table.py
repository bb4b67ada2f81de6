"""What a library callable returns, as the interpreter values it: the JAX API's value semantics as data.

:func:`call_semantics` answers, for a qualified name (`jax.numpy.sum`, `jax.lax.psum`,
`numpy.random.default_rng`), one :class:`CallSemantics` record: the kind of result (:class:`Returns`),
the value flags it carries, the functions it traces (`LAX_BODIES`) and whether it draws from a key.
The records are composed once per name from the tables of :mod:`.jax_api` (first match wins, in the
order of :data:`_PRECEDENCE`), so the interpreter reads a call's meaning in one lookup and acts on its
kind. A name the table does not know is a call of the project, or of a library the model does not see
into. Cost: one composition per distinct name (memoised), then a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto
from functools import lru_cache

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.values import (
    BOOL_MASK, FILESYSTEM_PATH, JAX_ARRAY, LOGGER, NUMPY_GENERATOR, PYTHON_CONTAINER, PYTHON_SET,
)


class Returns(Enum):
    """The kind of value a library call returns."""

    PYTHON_VALUE = auto()
    """A Python value even in traced code (`lax.axis_size`): nothing traced."""
    TRACED_BODIES = auto()
    """A lax control-flow primitive: traces its bodies (:attr:`CallSemantics.bodies`); the result depends
    on its operands and on the branch it runs in."""
    PASSES_ARRAY = auto()
    """Its first argument, moved or waited for (`jax.device_put`): a JAX array when that is one, else
    nothing known."""
    STOPS_GRADIENT = auto()
    """`lax.stop_gradient`: its argument's value, without a gradient."""
    ARRAY_OPERATION = auto()
    """An operation of JAX's array namespaces: staged under a trace, depending on its arguments (with the
    flags of :attr:`CallSemantics.flags`: an array, a boolean mask, a tuple of arrays)."""
    ELEMENTWISE = auto()
    """A Python builtin computing from its arguments' elements (`max`, `sum`, `sorted`)."""
    CONTAINER = auto()
    """A Python container of its arguments (`list`, `dict`, `set`)."""
    OBJECT = auto()
    """An object with impure methods, tracked through assignments (a logger, a NumPy generator, a path)."""
    KEY_TAKING_LAYER = auto()
    """A library layer taking its PRNG key per call (`eqx.nn.Dropout(0.5)`), when the library is not the
    project's own."""
    REPLACED_COPY = auto()
    """A copy of its first argument with fields replaced (`dataclasses.replace(state, step=s)`): of that
    object's class when it is known, holding what it and the new values hold."""
    NUMPY_ARRAY = auto()
    """A NumPy function returning an array: a concrete NumPy array when its arguments depend on nothing
    traced, else nothing known."""


@dataclass(frozen=True, slots=True)
class CallSemantics:
    """What a library callable does, as far as values go."""

    returns: Returns
    flags: int = 0
    """The value flags of the result (an `OBJECT`'s kind, an `ARRAY_OPERATION`'s array, mask or tuple)."""
    bodies: tuple[jax_api.BodySlot, ...] = ()
    """The functions a `TRACED_BODIES` call traces, by argument slot."""
    constant_when_operands_are: bool = False
    """A Python value when its first operand depends on nothing traced (`lax.psum(1, axis)`)."""
    seeded_by_argument: bool = False
    """An `OBJECT` seeded by its first argument (`np.random.default_rng(0)`), from entropy without one."""
    draws: bool = False
    """Consumes the PRNG key passed first or as `key=` (`jax.random.normal(key, ...)`)."""


_OBJECT_FACTORIES = {
    "logging.getLogger": LOGGER,
    "numpy.random.default_rng": NUMPY_GENERATOR,
    "numpy.random.RandomState": NUMPY_GENERATOR,
    "numpy.random.Generator": NUMPY_GENERATOR,
    "pathlib.Path": FILESYSTEM_PATH,
    "pathlib.PurePath": FILESYSTEM_PATH,
    "pathlib.PosixPath": FILESYSTEM_PATH,
    "pathlib.WindowsPath": FILESYSTEM_PATH,
}
_SEEDED_BY_ARGUMENT = frozenset({"numpy.random.default_rng", "numpy.random.RandomState"})
_ELEMENTWISE_BUILTINS = frozenset(
    f"builtins.{n}" for n in ("abs", "min", "max", "sum", "round", "pow", "divmod", "sorted", "reversed", "iter", "next")
)
_CONTAINER_BUILTINS = frozenset(f"builtins.{n}" for n in ("list", "tuple", "sorted", "dict", "set", "frozenset"))
_SET_BUILTINS = frozenset({"builtins.set", "builtins.frozenset"})


def _replaced_copy(name: str) -> CallSemantics | None:
    return CallSemantics(Returns.REPLACED_COPY) if name in jax_api.KEY_STORING_CALLS else None


def _python_value(name: str) -> CallSemantics | None:
    return CallSemantics(Returns.PYTHON_VALUE) if name in jax_api.CONCRETE_RESULT_CALLS else None


def _lax_bodies(name: str) -> CallSemantics | None:
    bodies = jax_api.LAX_BODIES.get(name)
    return None if bodies is None else CallSemantics(Returns.TRACED_BODIES, bodies=bodies)


def _key_taking_layer(name: str) -> CallSemantics | None:
    layer = name.startswith(jax_api.KEY_TAKING_LIBRARIES) and name.rpartition(".")[2][:1].isupper() \
        and not name.startswith(jax_api.KEY_NEUTRAL_PREFIXES)
    return CallSemantics(Returns.KEY_TAKING_LAYER) if layer else None


def _object(name: str) -> CallSemantics | None:
    kind = _OBJECT_FACTORIES.get(name)
    return None if kind is None else CallSemantics(Returns.OBJECT, kind, seeded_by_argument=name in _SEEDED_BY_ARGUMENT)


def _passes_array(name: str) -> CallSemantics | None:
    return CallSemantics(Returns.PASSES_ARRAY) if name in jax_api.ARRAY_PRESERVING_CALLS else None


def _stops_gradient(name: str) -> CallSemantics | None:
    return CallSemantics(Returns.STOPS_GRADIENT) if name == jax_api.STOP_GRADIENT else None


def _array_operation(name: str) -> CallSemantics | None:
    if not jax_api.is_array_call(name):
        return None
    flags = BOOL_MASK if name in jax_api.BOOL_RESULT_CALLS else 0
    flags |= JAX_ARRAY if jax_api.returns_array(name) else 0
    flags |= PYTHON_CONTAINER if name in jax_api.TUPLE_RESULT_CALLS else 0  # `w, v = eigh(m)`
    draws = jax_api.is_random_call(name) and name not in jax_api.NON_CONSUMING_RANDOM
    return CallSemantics(Returns.ARRAY_OPERATION, flags, constant_when_operands_are=name in jax_api.CONSTANT_COLLECTIVES,
                         draws=draws)


def _builtin(name: str) -> CallSemantics | None:
    if name in _ELEMENTWISE_BUILTINS:
        return CallSemantics(Returns.ELEMENTWISE)
    if name in _CONTAINER_BUILTINS:
        return CallSemantics(Returns.CONTAINER, PYTHON_CONTAINER | (PYTHON_SET if name in _SET_BUILTINS else 0))
    return None


def _numpy_array(name: str) -> CallSemantics | None:
    numpy = name.startswith("numpy.") and jax_api.returns_array(f"jax.{name}")
    return CallSemantics(Returns.NUMPY_ARRAY) if numpy else None


_PRECEDENCE: tuple[Callable[[str], CallSemantics | None], ...] = (
    _python_value, _lax_bodies, _key_taking_layer, _object, _passes_array, _stops_gradient, _array_operation,
    _builtin, _numpy_array, _replaced_copy,
)
"""The readings of a name, most specific first (`lax.axis_index_size` is a Python value before it is an
array operation; `lax.stop_gradient` stops gradients before it is an array operation)."""


@lru_cache(maxsize=4096)
def call_semantics(name: str) -> CallSemantics | None:
    """What calling the library callable `name` returns; None for a name the table does not know."""
    for reading in _PRECEDENCE:
        semantics = reading(name)
        if semantics is not None:
            return semantics
    return None
