"""Object attributes that hold JAX arrays: what a class's methods store through `self` (or through a
parameter annotated with the class), and class fields annotated as arrays (NamedTuple, dataclass).

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: it reads the builder's current
scope while the one traversal runs and writes what it learns to the module's records, which the model
reads once every method has been seen.
"""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.semantics.annotations import AnnotationReader
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, ScopeKind
from jaxcheck.analyzer.semantics.values import JAX_ARRAY, ParamDep, Value


class AttributeReader(AnnotationReader):
    """Records attribute stores, array-annotated class fields and which class each attribute read
    belongs to (`self.buf` in a method, `state.vel` for a parameter annotated `state: State`)."""

    scope: Scope
    records: ModuleRecords
    _param_classes: dict[str, dict[str, str]]

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
        """`self.buf = v`: whether every store to the class's attribute is a JAX array so far."""
        owner = self._attribute_owner(target)
        if owner is not None:
            stores = self.records.array_attribute_stores
            stores[owner] = stores.get(owner, True) and bool(value.flags & JAX_ARRAY)

    def _note_attribute_read(self, node: cst.Attribute) -> None:
        owner = self._attribute_owner(node)
        if owner is not None:
            self.records.attribute_owners[id(node)] = owner

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
