"""Python scopes and bindings, with import-qualified names, built in the model's own pass.

Only what JAX rules need is tracked: which names are imports (and of what), functions, classes or
plain variables, following Python's rule that class bodies are not enclosing scopes for functions.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from jaxcheck.analyzer.semantics.jax_api import canonical
from jaxcheck.analyzer.semantics.values import NO_DEPS, UNKNOWN, Value

BUILTIN_NAMES = frozenset(dir(builtins))


class BindingKind(Enum):
    IMPORT = "import"
    FUNCTION = "function"
    CLASS = "class"
    VARIABLE = "variable"


@dataclass(frozen=True, slots=True)
class Binding:
    """What a name is bound to: an import (`target` = qualified name), a function or class
    (`target` = its key), or any other variable (`target` = "")."""

    kind: BindingKind
    target: str = ""


VARIABLE = Binding(BindingKind.VARIABLE)


class ScopeKind(Enum):
    MODULE = "module"
    FUNCTION = "function"
    CLASS = "class"
    COMPREHENSION = "comprehension"


@dataclass(slots=True)
class Scope:
    """One Python scope. `key` is the qualified key of the module, function or class it belongs to.

    `env` holds the current abstract value of each local name (flow-sensitive, updated in statement
    order); `closure` holds snapshots of enclosing functions' environments taken at definition time.
    """

    kind: ScopeKind
    key: str
    parent: Scope | None
    bindings: dict[str, Binding] = field(default_factory=dict)
    env: dict[str, Value] = field(default_factory=dict)
    closure: tuple[dict[str, Value], ...] = ()
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    self_name: str | None = None
    class_scope: Scope | None = None

    def function_scope(self) -> Scope:
        """The nearest enclosing function or module scope (comprehensions belong to it)."""
        scope = self
        while scope.kind is ScopeKind.COMPREHENSION and scope.parent is not None:
            scope = scope.parent
        return scope

    def lookup(self, name: str) -> Binding | None:
        """The binding `name` resolves to from this scope, or None when it is unbound (or builtin)."""
        resolved = self.resolve(name)
        return None if resolved is None else resolved[1]

    def resolve(self, name: str) -> tuple[Scope, Binding] | None:
        """The scope that binds `name` as seen from here (class bodies do not enclose functions)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if scope.kind is not ScopeKind.CLASS or first:
                if name in scope.declared_global:
                    module = self.module_scope()
                    binding = module.bindings.get(name)
                    return None if binding is None else (module, binding)
                binding = scope.bindings.get(name)
                if binding is not None and name not in scope.declared_nonlocal:
                    return scope, binding
            first = False
            scope = scope.parent
        return None

    def module_scope(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def load(self, name: str) -> Value:
        """The abstract value `name` has here: local env, then enclosing snapshots; globals read from inside
        a function are concrete."""
        scope: Scope | None = self
        while scope is not None:
            if scope.kind is ScopeKind.MODULE and scope is self.function_scope():
                return scope.env.get(name, UNKNOWN)  # module-level code reads its own bindings
            if scope.kind is ScopeKind.MODULE or name in scope.declared_global:
                return self._module_value(name)
            if scope.kind is not ScopeKind.CLASS:
                value = scope.env.get(name)
                if value is not None:
                    return value
                if scope.kind is ScopeKind.FUNCTION:
                    if name in scope.bindings:
                        return UNKNOWN
                    for snapshot in scope.closure:
                        value = snapshot.get(name)
                        if value is not None:  # the enclosing function may rebind it before the call
                            return value.without_shape()
                    return self._module_value(name)
            scope = scope.parent
        return UNKNOWN

    def _module_value(self, name: str) -> Value:
        """Module-level values are concrete; only their type facts (a list, a logger, the class of an
        object, the type facts of a dict literal's fields: `TABLES["a"]` holding a NumPy array) carry over."""
        value = self.module_scope().env.get(name)
        if value is None or not (value.flags or value.instance):
            return UNKNOWN
        fields = None if value.fields is None else tuple(
            (key, Value(NO_DEPS, field.flags, instance=field.instance)) for key, field in value.fields)
        return Value(NO_DEPS, value.flags, instance=value.instance, fields=fields)

    def bind(self, name: str, binding: Binding, value: Value = UNKNOWN) -> None:
        """Bind `name` in this scope (or the module scope for `global` names) with its current value."""
        if name in self.declared_global:
            self.module_scope().bindings[name] = binding
            return
        self.bindings[name] = binding
        if self.kind is not ScopeKind.CLASS:
            if value:
                self.env[name] = value
            else:
                self.env.pop(name, None)


def qualified_name(scope: Scope, node: cst.BaseExpression) -> str | None:
    """The canonical qualified name `node` refers to (`jnp.sum` -> `jax.numpy.sum`, `print` ->
    `builtins.print`, a local function -> its key), or None for anything that is not a plain
    dotted reference to an import, definition or builtin."""
    if isinstance(node, cst.Name):
        binding = scope.lookup(node.value)
        if binding is None:
            return f"builtins.{node.value}" if node.value in BUILTIN_NAMES else None
        if binding.kind is BindingKind.VARIABLE:
            return None
        return binding.target
    if isinstance(node, cst.Attribute):
        base = qualified_name(scope, node.value)
        if base is None:
            return None
        return canonical(f"{base}.{node.attr.value}")
    return None
