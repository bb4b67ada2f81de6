"""Stores: what assignments, augmented assignments, item and attribute stores and mutations change.

Binding a target records, for program order and the rules, which name changed where (inside which
branches and loops), what it now holds (its value, its fields, its origin as a callable), and whether a
store or a mutating call changes an object a trace may have read. Cost: constant work per target part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import CallableOrigin, ChangeKind, ChangeSite
from jaxcheck.analyzer.semantics.guards import lookup_of
from jaxcheck.analyzer.semantics.interpreter import InterpreterCore
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.records import OuterName
from jaxcheck.analyzer.semantics.scopes import (
    VARIABLE,
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    qualified_name,
)
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.syntax import argument, chain_root
from jaxcheck.analyzer.semantics.values import PYTHON_CONTAINER, UNKNOWN, Value, combine
from jaxcheck.analyzer.tree import descendants


class StoreRecorder(InterpreterCore):
    """Records what stores change (see the module docstring)."""

    def _bind(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name):
            self._lookups.pop(target.value, None)
            self._record_assignment(target)
            self.scope.bind(target.value, VARIABLE, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            starred = any(isinstance(e, cst.StarredElement) for e in elements)
            parts = value.elements if value.elements is not None else structure.call_elements(value, len(elements))
            if parts is not None and not starred and len(parts) == len(elements):
                for element, part in zip(elements, parts):
                    self._bind(element.value, part)
            else:
                part = value.element()
                for element in elements:
                    inner = Value(part.deps, PYTHON_CONTAINER) if isinstance(element, cst.StarredElement) else part
                    self._bind(element.value, inner)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, value)
        else:
            self._note_attribute_store(target, value)
            self._note_module_attribute_change(target)
            self._note_imported_attribute_change(target, ChangeKind.REBOUND)
            self._eval_target_parts(target, value)

    def _outer_name(self, owner: Scope, kind: BindingKind) -> OuterName:
        """One shared OuterName per (scope, kind): reads of outer names are frequent."""
        key = (owner.key, kind)
        outer = self._outer_names.get(key)
        if outer is None:
            outer = self._outer_names[key] = OuterName(owner.key, owner.kind is ScopeKind.MODULE, kind)
        return outer

    def _record_assignment(self, target: cst.Name) -> None:
        """Note a binding of `target` in its scope's history (or as an outer write)."""
        name = target.value
        scope = self.scope.function_scope() if self.scope.kind is ScopeKind.COMPREHENSION else self.scope
        if scope.kind is ScopeKind.CLASS:
            return
        if name in scope.declared_global or name in scope.declared_nonlocal:
            owner = self._owner(name)
            self.records.outer_writes[id(target)] = None if owner is None else self._outer_name(owner, BindingKind.VARIABLE)
            if owner is not None:
                self.records.history.changed(owner.key, name, self._change(target, ChangeKind.WRITTEN_FROM_FUNCTION))
            return
        order = self._next_order()
        self.records.history.assigned(scope.key, name, target, tuple(self._branches), tuple(self._loops), order)
        self.records.history.created(scope.key, name, None)
        self.records.program_order.bound_transform(scope.key, name, None)

    def _note_module_attribute_change(self, target: cst.BaseExpression) -> None:
        """`agent.epsilon = 0.1` (or `+=`) in module code on an object of a class of this module: a change in
        program order (see `SemanticModel.attribute_change`)."""
        if self.scope.function_scope().kind is not ScopeKind.MODULE or not isinstance(target, cst.Attribute):
            return
        owner = self._attribute_owner(target)
        if owner is not None:
            change = self._change(target, ChangeKind.MUTATED, owner[1])
            receiver = target.value.value if isinstance(target.value, cst.Name) else None
            others = frozenset(name for name, value in self.scope.env.items()
                               if value.instance == owner[0] and name != receiver)
            self.records.module_attribute_changes.setdefault(owner, []).append((change, others))

    def _note_imported_attribute_change(self, target: cst.BaseExpression, kind: ChangeKind) -> None:
        """`config.DT = 0.5`, `config.DT += 1`, `config.HPARAMS["lr"] = 0.0` on an imported module or object:
        a change of what traced code reading `config.DT` froze (see `SemanticModel.imported_attribute_change`)."""
        if isinstance(target, cst.Subscript):
            target, kind = target.value, ChangeKind.MUTATED
        if not isinstance(target, cst.Attribute) or not isinstance(target.value, cst.Name):
            return
        resolved = self.scope.resolve(target.value.value)
        if resolved is None or resolved[1].kind is not BindingKind.IMPORT or resolved[0].kind is not ScopeKind.MODULE:
            return
        owner = (resolved[1].target, target.attr.value)
        self.records.imported_attribute_changes.setdefault(owner, []).append(self._change(target, kind))

    def _change(self, node: cst.CSTNode, kind: ChangeKind, path: str | None = None) -> ChangeSite:
        """A change made here, now: by the current code scope, inside the current loops."""
        return ChangeSite(node, kind, self._next_order(), self._code_scope, tuple(self._loops), path)

    def _note_final(self, statement: cst.AnnAssign) -> None:
        annotation = statement.annotation.annotation
        if isinstance(annotation, cst.Subscript):
            annotation = annotation.value
        final = qualified_name(self.scope, annotation) in ("typing.Final", "typing_extensions.Final")
        if final and isinstance(statement.target, cst.Name) and self.scope.kind is not ScopeKind.CLASS:
            self.records.history.declared_final(self.scope.function_scope().key, statement.target.value)

    def _note_lookup(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """`f = table.get(k)`: `if f is None:` then proves the key `k` absent from `table`."""
        lookup = lookup_of(value)
        if lookup is None:
            return
        for target in targets:
            if isinstance(target, cst.Name):
                self._lookups[target.value] = lookup

    def _note_kept_transform(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """`cache[k] = jax.jit(f)` under `if k not in cache:` (or `self._f = ...` under `if self._f is None:`)
        fills a cache slot that outlives the call; `table[name] = jax.jit(f)` in a loop keeps one function
        per entry (see :attr:`TransformSite.memoized` and :attr:`TransformSite.tabled`)."""
        site = self.records.transform_sites.get(id(value))
        if site is None:
            return
        if site.function is not None and len(targets) == 1 and isinstance(targets[0], cst.Name):
            self._kept_transforms.setdefault(site.function, {})[targets[0].value] = id(value)
        loops = len(self._loops)
        memoized = any(slot.covers(t) and depth == loops and self._outlives_call(t)
                       for t in targets for slot, depth in self._empty_slots)
        tabled = bool(self._loops) and any(self._is_entry_per_iteration(t) for t in targets)
        if memoized or tabled:
            self.records.transform_sites[id(value)] = replace(site, memoized=memoized, tabled=tabled)

    def _is_entry_per_iteration(self, target: cst.BaseExpression) -> bool:
        """`table[name] = ...` whose key names a variable of every loop around it (`for name, fn in ...`):
        each iteration of each loop stores to an entry of its own."""
        if not isinstance(target, cst.Subscript):
            return False
        keys = {node.value for element in target.slice for node in descendants(element) if isinstance(node, cst.Name)}
        return all(keys & self._loop_targets.get(loop, frozenset()) for loop in self._loops)

    def _outlives_call(self, target: cst.BaseExpression) -> bool:
        """Whether a store to `target` outlives the function call making it: a `global`/`nonlocal`
        name, or an item or attribute of an object the function did not create (an outer variable, `self`)."""
        scope = self.scope
        if isinstance(target, cst.Name):
            return not self.in_function or target.value in scope.declared_global | scope.declared_nonlocal
        root = chain_root(target)
        if not isinstance(root, cst.Name):
            return False
        resolved = scope.resolve(root.value)
        return root.value == scope.function_scope().self_name or resolved is None \
            or resolved[0] is not scope.function_scope()

    def _record_origin(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Remember how a callable bound to a plain name was created (for transform-in-loop)."""
        if isinstance(target, cst.Name) and self.scope.kind is not ScopeKind.CLASS:
            self.records.history.created(self.scope.function_scope().key, target.value, self._origin_of(value))

    def _name_lambda(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`g = lambda i: ...`: `g` names that function (`jax.jit(g)` traces it, like a `def`)."""
        key = self.records.function_keys.get(id(value)) if isinstance(value, cst.Lambda) else None
        if key is not None and isinstance(target, cst.Name) and self.scope.kind is not ScopeKind.CLASS:
            self.scope.bind(target.value, Binding(BindingKind.FUNCTION, key))

    def _record_transform_binding(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`step = jax.jit(f)`: calls of `step` (program order) call `f`; `self._act = jax.jit(self._act_impl)`:
        calls of `self._act` in the class's methods call `_act_impl`."""
        if isinstance(target, cst.Attribute):
            self._record_transformed_attribute(target, value)
            return
        if not isinstance(target, cst.Name):
            return
        if not isinstance(value, cst.Call) or self.records.call_names.get(id(value)) not in self.transforms:
            self._transform_results.discard((self._code_scope, target.value))
            return
        self._transform_results.add((self._code_scope, target.value))
        wrapped = argument(value, 0, ("fun", "f"))
        name = qualified_name(self.scope, wrapped) if wrapped is not None else None
        if name is not None:
            self.records.program_order.bound_transform(self._code_scope, target.value, name)

    def _may_call_project(self, node: cst.Call, called: Value) -> bool:
        """Whether a call the model cannot name may run a function of the project: a variable holding a
        callable (`step = partial(loss, s=2)`, then `step(x)`) or a method of an object of a class of this
        module (`runner.run()`); not a method of a library object, string, array or container
        (`logger.info(...)`, `"{}".format(v)`, `losses.append(v)`)."""
        if isinstance(node.func, cst.Name):
            return True
        receiver = self.records.values.get(id(node.func.value), UNKNOWN) if isinstance(node.func, cst.Attribute) else called
        return receiver.instance is not None

    def _record_transformed_attribute(self, target: cst.Attribute, value: cst.BaseExpression) -> None:
        slot = self._attribute_owner(target)
        if slot is None:
            return
        wrapped = argument(value, 0, ("fun", "f")) if isinstance(value, cst.Call) else None
        method = self._method_key(wrapped) if wrapped is not None and \
            self.records.call_names.get(id(value)) in self.transforms else None
        if method is not None:
            self._transformed_attributes[slot] = method
        else:
            self._transformed_attributes.pop(slot, None)

    def _origin_of(self, value: cst.BaseExpression) -> CallableOrigin:
        loops = tuple(self._loops)
        if isinstance(value, cst.Lambda):
            return CallableOrigin("lambda", loops)
        if isinstance(value, cst.Call):
            name = self.records.call_names.get(id(value))
            if name in jax_api.PARTIAL:
                return CallableOrigin("partial", loops)
            if name in self.transforms:
                return CallableOrigin("transform", loops)
        return CallableOrigin("value", loops)

    def _record_mutation(self, target: cst.BaseExpression, containers_only: bool = False) -> None:
        """`x[k] = v`, `x.attr = v`, `del x[k]`, `x.append(v)`: the object bound to `x` is mutated.
        With `containers_only` (method calls such as `.update`, common on non-containers too), only
        when `x` is known to be a Python container."""
        base = chain_root(target)
        if not isinstance(base, cst.Name) or base is target:
            return
        if containers_only and not self.scope.load(base.value).flags & PYTHON_CONTAINER:
            return
        written = target.value if containers_only and isinstance(target, cst.Attribute) else target  # `x.append`: x
        if isinstance(target, cst.Subscript) and any(test.covers(target) for test, _ in self._empty_slots):
            self.records.mutated_names.add(id(base))  # a new entry: no entry a trace read changes
            return
        self._record_mutated_name(base, target, _first_attribute(written, base))

    def _record_mutated_name(self, name: cst.Name, site: cst.CSTNode, path: str | None = None) -> None:
        self.records.mutated_names.add(id(name))
        owner = self._owner(name.value)
        if owner is not None:
            self.records.history.changed(owner.key, name.value, self._change(site, ChangeKind.MUTATED, path))

    def _eval_target_parts(self, target: cst.BaseExpression, stored: Value | None = None) -> None:
        """Record the sub-expressions of a store target (`x[i]`, `obj.attr`, tuples of those); `stored`,
        when known, is the value an item store puts there."""
        self._record_mutation(target)
        if isinstance(target, cst.Subscript):
            self._eval(target.value)
            self._slice(target.slice)
            if stored is None or not self._store_field(target, stored):
                self._forget_structure(target)
        elif isinstance(target, cst.Attribute):
            self._eval(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._eval_target_parts(element.value)
        elif isinstance(target, cst.StarredElement):
            self._eval_target_parts(target.value)

    def _store_field(self, target: cst.Subscript, stored: Value) -> bool:
        """`d["k"] = v` on a local dict whose string-keyed fields are known: field `k` now holds `v`, the
        other fields keep theirs (for every name bound to that dict; names bound to a part of it forget
        its structure). False when the store cannot be followed this way."""
        key = structure.constant_key(target.slice)
        if not (isinstance(key, str) and isinstance(target.value, cst.Name)) or target.value.value not in self.scope.env:
            return False
        current = self.scope.env[target.value.value]
        if current.fields is None:
            return False
        updated = current.with_field(key, stored)
        env = self.scope.env
        for name, value in list(env.items()):
            if value is current:
                env[name] = updated
            elif value.shares_structure(current):
                env[name] = value.without_structure()
        return True

    def _forget_structure(self, target: cst.BaseExpression) -> None:
        """After an item store or a mutating method call on `target`, or after passing it to a callee that
        may change it, what is known of the fields and the returned structure of its root name, and of
        every name sharing that structure (`p = params`, `enc = params["enc"]`), may be stale
        (`params["w"] = np.zeros(3)`)."""
        root = chain_root(target)
        if not isinstance(root, cst.Name):
            return
        changed = self.scope.load(root.value)
        if changed.fields is None and changed.returned is None:
            return
        env = self.scope.env
        for name, value in list(env.items()):
            if value is changed or value.shares_structure(changed):
                env[name] = value.without_structure()

    def _iteration_value(self, iterable: cst.BaseExpression, value: Value) -> Value:
        """The value bound to a loop or comprehension target iterating over `iterable`."""
        if isinstance(iterable, cst.Call):
            name = self.records.call_names.get(id(iterable))
            args = [self._known(a.value) for a in iterable.args if not a.star]
            if name == "builtins.enumerate" and args:
                return Value(args[0].element().deps, 0, (UNKNOWN, args[0].element()))
            if name == "builtins.zip":
                parts = tuple(a.element() for a in args)
                return Value(combine(parts).deps, 0, parts)
            if name == "builtins.range":
                return UNKNOWN
            func = iterable.func
            if isinstance(func, cst.Attribute):
                receiver = self._known(func.value)
                method = func.attr.value
                if method == "items":
                    return Value(receiver.deps, 0, (UNKNOWN, Value(receiver.deps) if receiver.deps else UNKNOWN))
                if method == "keys":
                    return UNKNOWN
        return value.element()

    def _slice(self, elements: Sequence[cst.SubscriptElement]) -> list[Value]:
        values: list[Value] = []
        for element in elements:
            part = element.slice
            if isinstance(part, cst.Index):
                values.append(self._eval(part.value))
            elif isinstance(part, cst.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        values.append(self._eval(bound))
        return values


def _first_attribute(target: cst.BaseExpression, root: cst.Name) -> str | None:
    """The attribute or constant item right after `root` in a store target (`cfg.alpha = a` -> "alpha",
    `self.buf.append` -> "buf", `CONFIG["lr"] *= 0.9` -> "lr"); None when the root object
    itself is written (`x[k] = v` with a key that is not a constant string)."""
    node: cst.BaseExpression = target
    attribute: str | None = None
    while node is not root:
        if isinstance(node, cst.Attribute):
            attribute = node.attr.value
            node = node.value
        elif isinstance(node, cst.Subscript):
            key = structure.constant_key(node.slice)
            attribute = key if isinstance(key, str) else None
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return None
    return attribute
