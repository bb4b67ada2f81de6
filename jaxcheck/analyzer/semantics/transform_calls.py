"""Calls of JAX transforms and lax control flow: which functions they trace, and how.

`jax.jit(f)`, `jax.vmap(f, in_axes=...)`, `partial(jax.jit, ...)(f)` make trace roots of `f` (or of a
method, a lambda, an instance's `__call__`) and record transform sites for the caching rules;
`lax.scan(body, ...)`, `lax.cond(p, f, g, *ops)` register their bodies as traced and pass them the
operands. Cost: constant work per call, plus its arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import CallableOrigin
from jaxcheck.analyzer.semantics.definitions import DefinitionReader
from jaxcheck.analyzer.semantics.interpreter import EXTERNAL_PREFIXES
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.parameter_use import PROBE_ATTRIBUTES
from jaxcheck.analyzer.semantics.records import TransformSite
from jaxcheck.analyzer.semantics.scopes import BindingKind, qualified_name
from jaxcheck.analyzer.semantics.summary import CallEdge, TraceSpec
from jaxcheck.analyzer.semantics.syntax import argument, is_false_literal, names_read
from jaxcheck.analyzer.semantics.values import (
    ARRAY_VALUED, CallArguments, JAX_ARRAY, PYTHON_CONTAINER, UNKNOWN, ParamDep, Value,
)

_NEVER_NONE = (
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda,
)


class TransformCallReader(DefinitionReader):
    """Reads the calls of transforms and lax control flow (see the module docstring)."""

    def _note_transformed_param(self, target: cst.BaseExpression, spec: TraceSpec) -> None:
        """`jax.grad(loss_fn)`, `jax.jit(partial(loss_fn, cfg))` where `loss_fn` is a parameter: the function
        a caller passes is traced (a project's jit wrapper). A transform of what the wrapper cannot follow
        (`jax.jit(decorate(fn))`) is noted (see :attr:`ModuleSummary.unfollowed`)."""
        for callable_, traced_by in self._peeled(target, spec):
            name = callable_.value if isinstance(callable_, cst.Name) else None
            resolved = self.scope.resolve(name) if name is not None else None
            if name is not None and resolved is not None and self.is_parameter(resolved[0], name):
                self._transformed_params.setdefault(resolved[0].key, []).append((name, traced_by))
            elif resolved is not None and resolved[1].kind is BindingKind.FUNCTION and self.in_function \
                    and resolved[0] is self.scope.function_scope():  # `jax.jit(wrapped)`, a local def calling `fn`
                self._transformed_locals.append((resolved[1].target, traced_by, self.function_key))
            elif self.in_function and spec.caches and self._mentions_parameter(callable_):
                self.unfollowed.add(self.function_key)

    def _mentions_parameter(self, node: cst.BaseExpression) -> bool:
        """Whether `node` reads a parameter of the current function, or a name whose value comes from one
        (`wrapped = wraps(fn)(...)`)."""
        for name in names_read(node):
            resolved = self.scope.resolve(name)
            if resolved is not None and self.is_parameter(resolved[0], name) and resolved[0] is self.scope.function_scope():
                return True
            if any(isinstance(dep, ParamDep) and dep.function == self.function_key for dep in self.scope.load(name).deps):
                return True
        return False

    def _instance_target(self, target: cst.BaseExpression, spec: TraceSpec) -> bool:
        """`jax.vmap(model)`, `jax.jit(model.apply)`, `jax.jit(model.encode)` on an instance of this
        module's class: the transform traces that method (self bound; `apply` drops the variables)."""
        method_call = self._called_method(target, self.records.values.get(id(target), UNKNOWN))
        if method_call is None:
            return False
        method, applied = method_call
        self._add_root(method, (spec.without_first_argument() if applied is not None else spec).binding(1))
        return True

    def _transform_call(self, node: cst.Call, transform: jax_api.Transform, bound: Sequence[cst.Arg] = ()) -> None:
        """`jax.jit(f, ...)`, or `partial(jax.jit, ...)(f)` with the `bound` arguments the partial gives."""
        self._root_site = (node, False)
        target = argument(node, 0, ("fun", "f"))
        if target is not None:
            spec = self._spec(transform, (*node.args, *bound))
            if not self._instance_target(target, self._called_spec(spec, node)):
                self._register_target(target, self._called_spec(spec, node))
            self._note_transformed_param(target, self._called_spec(spec, node))
            unmapped = self._unmapped_spec(transform, spec)
            if unmapped is not None:
                self._record_unbatched(node, target, unmapped)
            inner = self.callable_key(target) if self.in_function else None
            if inner is not None:  # `jax.grad(loss)(p)` inside a jitted body: `loss` runs under that jit too
                self._add_edge(target, CallEdge(self.function_key, inner, CallArguments()))
            if self._records_transform_sites:
                origin = self._callable_origin(target)
                if origin is not None and origin.kind == "method" and transform.name not in jax_api.IDENTITY_CACHED:
                    origin = None  # pmap, filter_jit: equal bound methods hit their cache
                if transform.name in jax_api.WRAPPER_CACHED and self._names_function(target):
                    origin = CallableOrigin("wrapper", tuple(self._loops))  # the cache is the new wrapper's own
                site = TransformSite(self._site_function, tuple(self._loops), origin, transform.caches)
                self.records.transform_sites[id(node)] = site

    def _transformed_here(self, node: cst.Call) -> bool:
        """Whether `node` applies a transform (`jax.jit(f)`, `partial(jax.jit, ...)(f)`) to its first argument
        and nothing else positionally: `jax.eval_shape(f, x)` traces `f` right there, unseen by program order."""
        if sum(arg.keyword is None for arg in node.args) > 1:
            return False
        name = qualified_name(self.scope, node.func)
        if name is not None:
            return name in self.transforms
        return isinstance(node.func, cst.Call) and self._configured_transform(node.func) is not None

    def _names_function(self, target: cst.BaseExpression) -> bool:
        """Whether `target` is the name of a function defined or imported (the same function each time
        it is read, unlike a loop variable)."""
        resolved = self.scope.resolve(target.value) if isinstance(target, cst.Name) else None
        return resolved is not None and resolved[1].kind in (BindingKind.FUNCTION, BindingKind.IMPORT)

    def _record_unbatched(self, node: cst.Call, target: cst.BaseExpression, spec: TraceSpec) -> None:
        """`jax.vmap(f, in_axes=(None, 0))`: remember which function gets which arguments unmapped (also
        for `functools.partial(f, a)` binding leading arguments only)."""
        partial_bound = 0
        if isinstance(target, cst.Call) and self.records.call_names.get(id(target)) in jax_api.PARTIAL \
                and target.args and all(arg.keyword is None and not arg.star for arg in target.args):
            partial_bound, target = len(target.args) - 1, target.args[0].value
        method = self._method_key(target)
        name = method or qualified_name(self.scope, target)
        call = self._immediate_calls.get(id(node))
        if call is not None and not any(arg.star or arg.keyword for arg in call.args):  # an unmapped None draws nothing
            nones = {i for i, arg in enumerate(call.args) if isinstance(arg.value, cst.Name) and arg.value.value == "None"}
            spec = replace(spec, unbatched_positions=frozenset(
                p for p in spec.unbatched_positions if (p + len(call.args) if p < 0 else p) not in nones
            ))
        if name is not None and not name.startswith(EXTERNAL_PREFIXES) and spec.unbatched_positions:
            bound = spec.bound_positional + partial_bound + (self._self_bound(method) if method else 0)
            self.records.unbatched_targets[id(node)] = (name, replace(spec, bound_positional=bound))

    def callable_key(self, target: cst.BaseExpression | None) -> str | None:
        """The key of a function of this module that `target` names (a lambda, `f`, `partial(f, ...)`,
        an instance of the module's class, `model.apply`)."""
        if isinstance(target, cst.Lambda):
            return self.records.function_keys.get(id(target))
        if isinstance(target, cst.Call) and self.records.call_names.get(id(target)) in jax_api.PARTIAL and target.args:
            return self.callable_key(target.args[0].value)
        if target is None:
            return None
        method_call = self._called_method(target, self.records.values.get(id(target), UNKNOWN))
        if method_call is not None:
            return method_call[0]
        name = qualified_name(self.scope, target)
        return name if name in self.functions else None

    def _called_spec(self, spec: TraceSpec, transform_call: cst.Call) -> TraceSpec:
        """`jax.vmap(f)(x)`: only the arguments of that call reach `f` (its defaults stay concrete)."""
        call = self._immediate_calls.get(id(transform_call))
        if call is None or any(arg.star for arg in call.args):
            return spec
        positional = sum(1 for arg in call.args if arg.keyword is None)
        keywords = frozenset(arg.keyword.value for arg in call.args if arg.keyword is not None)
        facts = argument_facts(call.args, self._immediate_args.get(id(call), []))
        return replace(spec, positional_limit=positional, passed_keywords=keywords, **facts._asdict())

    def _callable_origin(self, target: cst.BaseExpression) -> CallableOrigin | None:
        """How the callable a transform is applied to was created in the current function, if it was."""
        if isinstance(target, (cst.Lambda, cst.Call)):
            origin = self._origin_of(target)
            return origin if origin.kind != "value" else None
        here = tuple(self._loops)
        method_key = self._method_key(target)
        if method_key is not None:  # `self.method`: a new bound method on every evaluation (not a
            if method_key in self.static_methods or method_key in self.attribute_methods:  # staticmethod,
                return None  # nor a property's value)
            return CallableOrigin("method", here)
        method = isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
        name = target.value if isinstance(target, cst.Attribute) and method else target
        if not isinstance(name, cst.Name):
            return None
        owner = self._owner(name.value)
        if owner is None or owner is not self.scope.function_scope():
            return None
        created = self.records.history.origin_of(owner.key, name.value)
        if created is None:
            return None
        if method:  # `obj.f` of an object made here: a bound method, or a function field (a NamedTuple of
            return CallableOrigin("method", created.loops)  # functions) that is new only with a new object
        return created if created.kind != "value" else None

    def _created_per_call(self, body: cst.BaseExpression) -> bool:
        """Whether a lax call's `body` is a new callable each time the call runs: a lambda or
        `partial(...)` written in it, or a function (or lambda, or partial) the current function
        creates in the same loop iteration as the call. Module-level callables and bound methods are
        left cached (other calls may reuse them)."""
        if not self.in_function:
            return False
        origin = self._callable_origin(body)
        return origin is not None and origin.kind != "method" and origin.loops == tuple(self._loops)

    def _lax_call(self, node: cst.Call, name: str, args: list[Value]) -> None:
        self._root_site = (node, False)
        slots = jax_api.LAX_BODIES[name]
        for slot in slots:
            arity = slot.arity if slot.arity is not None else _operand_count(node, slots)
            spec = TraceSpec(name, True, positional_limit=arity, caches=True)
            operands = None
            if slot.arity is None and arity is not None:  # the branches are called with the operands
                operand_args, operand_values = node.args[len(args) - arity :], args[len(args) - arity :]
                facts = argument_facts(operand_args, operand_values)
                operands = CallArguments(tuple(value.deps for value in operand_values), **facts._asdict())
                spec = replace(spec, **facts._asdict())
            body = argument(node, slot.position, (slot.keyword,))
            if body is None:
                continue
            bodies = [e.value for e in body.elements] if slot.sequence and isinstance(body, (cst.List, cst.Tuple)) else [body]
            for each in bodies:
                self._register_target(each, spec if not self._created_per_call(each) else
                                      replace(spec, caches=False, caches_with=self.function_key))
                target = qualified_name(self.scope, each)
                if target is not None:
                    self._call_event(node, target)
                    if operands is not None:
                        self._add_edge(each, CallEdge(self.function_key, target, operands))


class ArgumentFacts(NamedTuple):
    """What is known of a call's arguments, by position and keyword (the fields of :class:`CallArguments`
    and :class:`TraceSpec` of the same names)."""

    array_positions: frozenset[int]
    array_keywords: frozenset[str]
    present_positions: frozenset[int]
    present_keywords: frozenset[str]
    falsy_positions: frozenset[int]
    falsy_keywords: frozenset[str]
    jax_positions: frozenset[int]
    jax_keywords: frozenset[str]


def argument_facts(args: Sequence[cst.Arg], values: Sequence[Value]) -> ArgumentFacts:
    """Which arguments are arrays (tracers whenever traced), which are JAX arrays (traced or not) and
    which are never None: literals, containers, `x.shape`-like attributes; which are false literals
    (nothing after a `*args`)."""
    arrays: tuple[set[int], set[str]] = (set(), set())
    present: tuple[set[int], set[str]] = (set(), set())
    falsy: tuple[set[int], set[str]] = (set(), set())
    jax_arrays: tuple[set[int], set[str]] = (set(), set())
    position = 0
    for arg, value in zip(args, values):
        if arg.star:
            break
        slot: int | str = arg.keyword.value if arg.keyword is not None else position
        if arg.keyword is None:
            position += 1
        if value.flags & JAX_ARRAY:
            _add(jax_arrays, slot)
        if value.flags & (JAX_ARRAY | ARRAY_VALUED):
            _add(arrays, slot)
        elif value.flags & PYTHON_CONTAINER or isinstance(arg.value, _NEVER_NONE) or (
            isinstance(arg.value, cst.Attribute) and arg.value.attr.value in PROBE_ATTRIBUTES
        ):
            _add(present, slot)
        if is_false_literal(arg.value):
            _add(falsy, slot)
    return ArgumentFacts(frozenset(arrays[0]), frozenset(arrays[1]), frozenset(present[0]), frozenset(present[1]),
                          frozenset(falsy[0]), frozenset(falsy[1]), frozenset(jax_arrays[0]), frozenset(jax_arrays[1]))


def _add(slots: tuple[set[int], set[str]], slot: int | str) -> None:
    if isinstance(slot, int):
        slots[0].add(slot)
    else:
        slots[1].add(slot)


def _operand_count(node: cst.Call, slots: Sequence[jax_api.BodySlot]) -> int | None:
    """How many operands `lax.cond(p, f, g, *operands)` / `lax.switch(i, branches, *operands)` passes
    its branches: the positional arguments after the bodies; None when that cannot be read."""
    if any(arg.star or arg.keyword is not None for arg in node.args):
        return None
    return max(0, len(node.args) - (max(slot.position for slot in slots) + 1))
