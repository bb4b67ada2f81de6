"""Framework adapters: what the classes of Flax Linen, Flax NNX, Flax struct and Equinox mean to the model.

A class of the module that derives from a framework's base (directly, or through other classes of the
module) is one of that framework's classes. The interpreter asks the adapters, as data, what follows:

- which methods the framework itself traces when a module is applied (Linen: `__call__`, `setup` and
  `@nn.compact` methods, under the transform named :attr:`Framework.traces_as`);
- whether `model.apply(variables, *args, method=...)` runs a method, and which keywords `apply` keeps;
- whether `self` in its methods is a bound scope rather than the object's own state (Linen), or carries
  Variables that the framework's transforms update in place (NNX);
- which field declarations make a pytree field static (`struct.field(pytree_node=False)`,
  `eqx.field(static=True)`, `eqx.static_field()`).

A new framework is a new :class:`Framework` in :data:`FRAMEWORKS`, not a branch in the interpreter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework's class semantics (see the module docstring)."""

    name: str
    bases: frozenset[str]
    """Qualified names of the framework's base classes."""
    traced_methods: frozenset[str] = frozenset()
    """Methods the framework traces whenever a module is applied."""
    traced_decorator: str | None = None
    """A decorator marking further methods the framework traces (`flax.linen.compact`)."""
    traces_as: str = ""
    """The transform name of those traces (the trace root's `TraceSpec.transform`)."""
    apply_method: str | None = None
    """`model.<apply_method>(variables, *args)` runs `__call__` (or the method `method=` names)."""
    apply_keywords: frozenset[str] = frozenset()
    """Keywords that method keeps for itself; the rest go to the applied method."""
    init_methods: frozenset[str] = frozenset()
    """Methods that run `__call__` to make the variables (`model.init(key, x)`): for program order, a call
    of one runs `__call__`, nothing else of the project."""
    self_is_scope: bool = False
    """`self` in a method is a bound scope the framework makes per application, not object state a
    trace could read stale."""
    lifts_variables: bool = False
    """The framework's transforms carry `self`'s Variables in and out: writes to them under those
    transforms update the object, once per call."""
    static_field_marks: frozenset[tuple[str, str]] = frozenset()
    """(keyword, value) of a field declaration (or its `metadata` entry) that makes the field static."""
    static_field_functions: frozenset[str] = frozenset()
    """Last name components of functions declaring a static field (`eqx.static_field()`)."""


FLAX_LINEN = Framework(
    "flax.linen", frozenset({"flax.linen.Module"}), frozenset({"__call__", "setup"}), "flax.linen.compact",
    traces_as="flax.linen.Module", apply_method="apply",
    apply_keywords=frozenset({"rngs", "method", "mutable", "capture_intermediates"}), self_is_scope=True,
    init_methods=frozenset({"init", "init_with_output", "lazy_init"}),
)
FLAX_NNX = Framework("flax.nnx", frozenset({"flax.nnx.Module", "flax.nnx.Object", "flax.nnx.Pytree"}),
                     lifts_variables=True)
FLAX_STRUCT = Framework("flax.struct", frozenset({"flax.struct.PyTreeNode"}),
                        static_field_marks=frozenset({("pytree_node", "False")}))
EQUINOX = Framework("equinox", frozenset({"equinox.Module"}), static_field_marks=frozenset({("static", "True")}),
                    static_field_functions=frozenset({"static_field"}))
DATACLASSES = Framework("dataclasses", frozenset(), static_field_marks=frozenset({("static", "True")}))
"""Plain dataclasses registered as pytrees (`jax.tree_util.register_dataclass`): `field(metadata={"static":
True})`."""

FRAMEWORKS = (FLAX_LINEN, FLAX_NNX, FLAX_STRUCT, EQUINOX, DATACLASSES)
_BY_BASE = {base: framework for framework in FRAMEWORKS for base in framework.bases}
STATIC_FIELD_MARKS = frozenset(mark for framework in FRAMEWORKS for mark in framework.static_field_marks)
"""Every framework's static-field marks: a field's declaration is read the same whatever its class."""
STATIC_FIELD_FUNCTIONS = frozenset(name for framework in FRAMEWORKS for name in framework.static_field_functions)


def frameworks_of(bases: Iterable[str | None], known: dict[str, frozenset[Framework]]) -> frozenset[Framework]:
    """The frameworks a class with these base classes (qualified names) belongs to: a framework base's, or
    those of a class of the module (`known`, by class key)."""
    found: set[Framework] = set()
    for base in bases:
        if base is None:
            continue
        if base in _BY_BASE:
            found.add(_BY_BASE[base])
        found |= known.get(base, frozenset())
    return frozenset(found)
