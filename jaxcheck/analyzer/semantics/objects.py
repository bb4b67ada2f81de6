"""Objects of the module's own classes: which class a value is an instance of, which method calling it
runs (`model(x)` runs `__call__`, a Flax `model.apply(variables, x)` too), and which attributes hold
JAX arrays (what the class's methods store through `self`, fields annotated as arrays).

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: it reads the builder's current
scope while the one traversal runs and writes what it learns to the module's records, which the model
reads once every method has been seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.annotations import AnnotationReader
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, ScopeKind, qualified_name
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.values import JAX_ARRAY, UNKNOWN, ParamDep, Value


class ObjectReader(AnnotationReader):
    """Tracks instances of the module's classes and the attributes of their objects."""

    scope: Scope
    records: ModuleRecords
    functions: dict[str, FunctionSummary]
    flax_classes: set[str]
    _param_classes: dict[str, dict[str, str]]
    _class_bases: dict[str, tuple[str, ...]]
    _attribute_instances: dict[tuple[str, str], str | None]

    def _note_class(self, key: str, bases: Sequence[cst.Arg]) -> None:
        """Remember class `key` and those of its bases that are classes of this module."""
        names = (qualified_name(self.scope, base.value) for base in bases)
        self._class_bases[key] = tuple(name for name in names if name is not None and name in self._class_bases)

    def _method_of(self, class_key: str, name: str) -> str | None:
        """The function key of method `name` of class `class_key`, defined there or in a base of this module."""
        pending, seen = [class_key], {class_key}
        while pending:
            current = pending.pop(0)
            key = f"{current}.{name}"
            if key in self.functions:
                return key
            for base in self._class_bases.get(current, ()):
                if base not in seen:
                    seen.add(base)
                    pending.append(base)
        return None

    def _instance_created(self, name: str | None) -> Value | None:
        """`MLP(...)`: an instance of the module's class `MLP`."""
        return Value(instance=name) if name is not None and name in self._class_bases else None

    def _called_method(self, func: cst.BaseExpression, callee: Value) -> tuple[str, bool] | None:
        """The method a call of `func` runs on an instance, and whether it is a Flax `apply` (whose first
        argument is the variables): `model(x)` -> `__call__`, `model.encode(x)` -> `encode`,
        `model.apply(v, x)` of a Flax module -> `__call__`."""
        if callee.instance is not None:
            method = self._method_of(callee.instance, "__call__")
            return (method, False) if method is not None else None
        if not isinstance(func, cst.Attribute):
            return None
        receiver = self.records.values.get(id(func.value), UNKNOWN).instance
        if receiver is None:
            return None
        if func.attr.value == "apply" and receiver in self.flax_classes:
            method = self._method_of(receiver, "__call__")
            return (method, True) if method is not None else None
        method = self._method_of(receiver, func.attr.value)
        return (method, False) if method is not None else None

    @staticmethod
    def _apply_arguments(args: Sequence[cst.Arg], values: Sequence[Value]) -> tuple[list[cst.Arg], list[Value]]:
        """The arguments `Module.apply(variables, *args, **kwargs)` passes on to the method: all but the
        variables and `apply`'s own keywords (`rngs`, `mutable`, ...)."""
        kept: list[tuple[cst.Arg, Value]] = []
        dropped_variables = False
        for arg, value in zip(args, values):
            if arg.keyword is None and not arg.star and not dropped_variables:
                dropped_variables = True
            elif arg.keyword is None or arg.keyword.value not in jax_api.FLAX_APPLY_KEYWORDS:
                kept.append((arg, value))
        return [arg for arg, _ in kept], [value for _, value in kept]

    def _note_param_classes(self, key: str, params: cst.Parameters) -> None:
        """Remember the parameters of function `key` annotated with a class of this module."""
        classes: dict[str, str] = {}
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            annotation = param.annotation.annotation if param.annotation is not None else None
            if isinstance(annotation, cst.Name):
                resolved = self.scope.resolve(annotation.value)
                if resolved is not None and resolved[1].kind is BindingKind.CLASS:
                    classes[param.name.value] = resolved[1].target
        if classes:
            self._param_classes[key] = classes

    def _note_field(self, statement: cst.AnnAssign) -> None:
        """`vel: jax.Array` in a class body: the field holds an array (a tracer when the object is traced)."""
        if self.scope.kind is ScopeKind.CLASS and isinstance(statement.target, cst.Name):
            if self._is_array_annotation(statement.annotation.annotation):
                self.records.array_fields.add((self.scope.key, statement.target.value))

    def _note_attribute_store(self, target: cst.BaseExpression, value: Value) -> None:
        """`self.buf = v`: whether every store to the class's attribute is a JAX array, and which class's
        instance it holds when every store agrees."""
        owner = self._attribute_owner(target)
        if owner is None:
            return
        stores = self.records.array_attribute_stores
        stores[owner] = stores.get(owner, True) and bool(value.flags & JAX_ARRAY)
        instance = value.instance
        if owner in self._attribute_instances and self._attribute_instances[owner] != instance:
            instance = None
        self._attribute_instances[owner] = instance

    def _attribute_read(self, node: cst.Attribute) -> Value | None:
        """Record which class's attribute `node` reads; the instance it holds, when known."""
        owner = self._attribute_owner(node)
        if owner is None:
            return None
        self.records.attribute_owners[id(node)] = owner
        instance = self._attribute_instances.get(owner)
        return Value(instance=instance) if instance is not None else None

    def _attribute_owner(self, node: cst.BaseExpression) -> tuple[str, str] | None:
        """(class key, attribute) for `self.attr` in a method or `p.attr` for a parameter `p: C`, while
        the name still holds the method's own receiver or parameter."""
        if not isinstance(node, cst.Attribute) or not isinstance(node.value, cst.Name):
            return None
        function = self.scope.function_scope()
        if function.kind is not ScopeKind.FUNCTION:
            return None
        name = node.value.value
        deps = self.scope.load(name).deps
        if len(deps) != 1 or not all(isinstance(d, ParamDep) and (d.function, d.name) == (function.key, name) for d in deps):
            return None
        if name == function.self_name and function.class_scope is not None:
            return function.class_scope.key, node.attr.value
        class_key = self._param_classes.get(function.key, {}).get(name)
        return (class_key, node.attr.value) if class_key is not None else None
