"""Objects of the module's own classes: which class a value is an instance of, which method calling it
runs (`model(x)` runs `__call__`, a Flax `model.apply(variables, x)` too), and which attributes hold
JAX arrays (what the class's methods store through `self`, fields annotated as arrays).

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: it reads the builder's current
scope while the one traversal runs and writes what it learns to the module's records, which the model
reads once every method has been seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.annotations import AnnotationReader
from jaxcheck.analyzer.semantics.frameworks import STATIC_FIELD_FUNCTIONS, STATIC_FIELD_MARKS, Framework
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, ScopeKind, qualified_name
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.syntax import dotted, literal_strings
from jaxcheck.analyzer.semantics.values import (
    JAX_ARRAY, KEY_TAKING_LAYER, NEW_OBJECT, PYTHON_CONTAINER, UNKNOWN, ParamDep, Value,
)


class ObjectReader(AnnotationReader):
    """Tracks instances of the module's classes and the attributes of their objects."""

    scope: Scope
    records: ModuleRecords
    functions: dict[str, FunctionSummary]
    framework_classes: dict[str, frozenset[Framework]]
    _param_classes: dict[str, dict[str, str]]
    _class_bases: dict[str, tuple[str, ...]]
    _attribute_instances: dict[tuple[str, str], str | None]
    _attribute_kinds: dict[tuple[str, str], int]

    def _note_class(self, key: str, node: cst.ClassDef) -> None:
        """Remember class `key`, those of its bases that are classes of this module, and whether its
        objects hash by identity (no decorator, no foreign base, no `__hash__`/`__eq__` of its own): a
        static `self` of such a class keeps the same cache key whatever its attributes become."""
        names = [qualified_name(self.scope, base.value) for base in node.bases]
        local = tuple(name for name in names if name is not None and name in self._class_bases)
        self._class_bases[key] = local
        plain_bases = all(name in local and name in self.records.identity_hashed or name == "builtins.object"
                          for name in names)
        if plain_bases and not node.decorators and not node.keywords and not _defines_equality(node):
            self.records.identity_hashed.add(key)

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
        """`MLP(...)`: a new instance of the module's class `MLP`."""
        return Value(flags=NEW_OBJECT, instance=name) if name is not None and name in self._class_bases else None

    def _called_method(self, func: cst.BaseExpression, callee: Value) -> tuple[str, Framework | None] | None:
        """The method a call of `func` runs on an instance, and the framework when it is a framework's
        `apply` (whose first argument is the variables): `model(x)` -> `__call__`, `model.encode(x)` ->
        `encode`, `model.apply(v, x)` of a Flax module -> `__call__` (and Flax Linen)."""
        if callee.instance is not None:
            method = self._method_of(callee.instance, "__call__")
            return (method, None) if method is not None else None
        if not isinstance(func, cst.Attribute):
            return None
        receiver = self.records.values.get(id(func.value), UNKNOWN).instance
        if receiver is None:
            return None
        for framework in self.framework_classes.get(receiver, frozenset()):
            if func.attr.value == framework.apply_method:
                method = self._method_of(receiver, "__call__")
                return (method, framework) if method is not None else None
        method = self._method_of(receiver, func.attr.value)
        return (method, None) if method is not None else None

    def _initialized_method(self, func: cst.BaseExpression) -> str | None:
        """The method a framework's initializer runs (`model.init(key, x)` of a Flax module: `__call__`)."""
        receiver = self.records.values.get(id(func.value), UNKNOWN).instance if isinstance(func, cst.Attribute) else None
        if receiver is None or not isinstance(func, cst.Attribute):
            return None
        if any(func.attr.value in framework.init_methods for framework in self.framework_classes.get(receiver, ())):
            return self._method_of(receiver, "__call__")
        return None

    def _applied_method(self, args: Sequence[cst.Arg], call_method: str) -> str | None:
        """The method a Flax `apply` runs: `__call__` (`call_method`), or the one `method=` names
        (`Model.encode`, `"encode"`, `model.encode`); None when that cannot be read."""
        chosen = next((arg.value for arg in args if arg.keyword is not None and arg.keyword.value == "method"), None)
        if chosen is None:
            return call_method
        if isinstance(chosen, cst.Attribute):
            name = chosen.attr.value
        elif isinstance(chosen, cst.SimpleString) and chosen.raw_value.isidentifier():
            name = chosen.raw_value
        else:
            return None
        return self._method_of(call_method.rpartition(".")[0], name)

    @staticmethod
    def _apply_arguments(args: Sequence[cst.Arg], values: Sequence[Value],
                         framework: Framework) -> tuple[list[cst.Arg], list[Value]]:
        """The arguments `Module.apply(variables, *args, **kwargs)` passes on to the method: all but the
        variables and `apply`'s own keywords (`rngs`, `mutable`, ...)."""
        kept: list[tuple[cst.Arg, Value]] = []
        dropped_variables = False
        for arg, value in zip(args, values):
            if arg.keyword is None and not arg.star and not dropped_variables:
                dropped_variables = True
            elif arg.keyword is None or arg.keyword.value not in framework.apply_keywords:
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
        """`vel: jax.Array` in a class body: the field holds an array (a tracer when the object is traced),
        unless it is declared static (`struct.field(pytree_node=False)`, `eqx.field(static=True)`)."""
        if self.scope.kind is ScopeKind.CLASS and isinstance(statement.target, cst.Name):
            if self._is_array_annotation(statement.annotation.annotation) and not _static_field(statement.value):
                self.records.array_fields.add((self.scope.key, statement.target.value))

    def _note_own_flattening(self, key: str, node: cst.ClassDef) -> None:
        """A class that flattens itself (`@register_pytree_node_class`, a `tree_flatten` method, or
        `@partial(register_dataclass, meta_fields=...)`) chooses its leaves in code: none of its annotated
        fields is known to be one."""
        decorators = (qualified_name(self.scope, d.decorator) or dotted(d.decorator) for d in node.decorators)
        flattening = any(name.endswith(jax_api.SELF_FLATTENING) for name in decorators if name)
        flattening |= any(isinstance(d.decorator, cst.Call) and any(
            a.keyword is not None and a.keyword.value == "meta_fields" for a in d.decorator.args) for d in node.decorators)
        flattening |= any(isinstance(statement, cst.FunctionDef) and statement.name.value.startswith("tree_flatten")
                          for statement in node.body.body)
        if flattening:
            self.drop_fields(key)

    def drop_fields(self, key: str) -> None:
        """Forget which fields of class `key` are array leaves (its flattening is not the fields')."""
        self.records.array_fields = {field for field in self.records.array_fields if field[0] != key}

    def _note_attribute_store(self, target: cst.BaseExpression, value: Value) -> None:
        """`self.buf = v`: whether every store to the class's attribute is a JAX array, which class's
        instance it holds when every store agrees, and where stores happen outside construction."""
        owner = self._attribute_owner(target)
        if owner is None:
            return
        self._note_attribute_change(target, owner)
        stores = self.records.array_attribute_stores
        stores[owner] = stores.get(owner, True) and bool(value.flags & JAX_ARRAY)
        instance = value.instance
        if owner in self._attribute_instances and self._attribute_instances[owner] != instance:
            instance = None
        self._attribute_instances[owner] = instance
        kinds = self._attribute_kinds
        kinds[owner] = kinds.get(owner, _KEPT_KINDS) & value.flags

    def _note_attribute_change(self, target: cst.BaseExpression, owner: tuple[str, str] | None = None) -> None:
        """A store or update (`self.calls += 1`) of `owner`'s attribute: outside a constructor, in a
        function, it can happen after a trace read the attribute."""
        owner = owner or self._attribute_owner(target)
        function = self.scope.function_scope()
        if owner is not None and function.kind is ScopeKind.FUNCTION and function.key.rpartition(".")[2] not in CONSTRUCTORS:
            self.records.attribute_changes.setdefault(owner, []).append((target, function.key))

    def _attribute_read(self, node: cst.Attribute) -> Value | None:
        """Record which class's attribute `node` reads; the instance it holds, when known, and what every
        store seen so far put there (a Python container, `self.history = []`; a library layer object,
        `self.drop = eqx.nn.Dropout(0.5)`)."""
        owner = self._attribute_owner(node)
        if owner is None:
            return None
        self.records.attribute_owners[id(node)] = owner
        function = self.scope.function_scope()
        if isinstance(node.value, cst.Name) and (node.value.value == function.self_name or self._class_attribute(node)):
            self.records.receiver_reads.add(id(node))
        instance = self._attribute_instances.get(owner)
        kinds = self._attribute_kinds.get(owner, 0)
        if instance is None and not kinds:
            return None
        return Value(flags=kinds, instance=instance)

    def _attribute_owner(self, node: cst.BaseExpression) -> tuple[str, str] | None:
        """(class key, attribute) for `self.attr` (or `cls.attr`) in a method, `obj.attr` for an object
        of a known class (`p: C`, `obj = C()`), and `C.attr` for a class of this module."""
        if not isinstance(node, cst.Attribute) or not isinstance(node.value, cst.Name):
            return None
        function = self.scope.function_scope()
        name, attribute = node.value.value, node.attr.value
        value = self.scope.load(name)
        if function.kind is ScopeKind.FUNCTION and name == function.self_name and function.class_scope is not None:
            own = ParamDep(function.key, name)
            return (function.class_scope.key, attribute) if value.deps == frozenset({own}) else None
        if value.instance is not None:
            return value.instance, attribute
        return self._class_attribute(node)

    def _class_attribute(self, node: cst.Attribute) -> tuple[str, str] | None:
        """(class key, attribute) for `C.attr` with `C` a class of this module."""
        resolved = self.scope.resolve(node.value.value) if isinstance(node.value, cst.Name) else None
        if resolved is not None and resolved[1].kind is BindingKind.CLASS:
            return resolved[1].target, node.attr.value
        return None


CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__", "setup"})
"""Methods that build an object: their stores happen before anyone can trace with it."""


_KEPT_KINDS = PYTHON_CONTAINER | KEY_TAKING_LAYER | NEW_OBJECT
"""What an attribute read keeps of the values stored there (when every store agrees)."""


def _static_field(value: cst.BaseExpression | None) -> bool:
    """Whether a field's default declares it static, not a pytree leaf: `field(pytree_node=False)`,
    `eqx.field(static=True)`, `eqx.static_field()`, `dataclasses.field(metadata={"static": True})`."""
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, (cst.Name, cst.Attribute)) and dotted(value.func).rpartition(".")[2] in STATIC_FIELD_FUNCTIONS:
        return True
    for arg in value.args:
        if arg.keyword is None:
            continue
        if isinstance(arg.value, cst.Name) and (arg.keyword.value, arg.value.value) in STATIC_FIELD_MARKS:
            return True
        if arg.keyword.value == "metadata" and any(mark in STATIC_FIELD_MARKS for mark in _entries(arg.value)):
            return True
    return False


def _entries(node: cst.BaseExpression) -> Iterator[tuple[str, str]]:
    """(key, value source) of a literal `{"k": v}` or `dict(k=v)` whose values are names (`False`)."""
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.value, cst.Name):
                keys = literal_strings(element.key) if isinstance(element.key, cst.SimpleString) else None
                if keys:
                    yield keys[0], element.value.value
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            if arg.keyword is not None and isinstance(arg.value, cst.Name):
                yield arg.keyword.value, arg.value.value


def _defines_equality(node: cst.ClassDef) -> bool:
    """Whether the class body defines or assigns `__hash__` or `__eq__`."""
    for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.FunctionDef) and statement.name.value in ("__hash__", "__eq__"):
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value in ("__hash__", "__eq__") for t in small.targets
                ):
                    return True
    return False
