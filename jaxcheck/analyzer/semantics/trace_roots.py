"""Trace roots: reading which functions a transform traces, and how, from decorators and calls.

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: it reads the builder's scope,
records and function table while the one traversal runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, qualified_name
from jaxcheck.analyzer.semantics.summary import FunctionSummary, TraceRoot, TraceSpec
from jaxcheck.analyzer.semantics.syntax import is_false_literal, literal_ints, literal_strings, unbatched_positions


class TraceRootReader:
    """Finds trace roots: `@jax.jit`, `partial(jax.jit, static_argnums=...)`, `jax.jit(f)`,
    `jax.vmap(f, in_axes=(0, None))`, nested transforms and lax bodies."""

    scope: Scope
    records: ModuleRecords
    transforms: dict[str, jax_api.Transform]
    functions: dict[str, FunctionSummary]
    roots: dict[tuple[str, TraceSpec], TraceRoot]
    static_methods: set[str]
    root_sites: dict[tuple[str, TraceSpec], tuple[cst.CSTNode, bool]]
    """Where each root's transform is applied (the decorator, or the call), and whether by a decorator."""
    _root_site: tuple[cst.CSTNode, bool] | None

    def _add_root(self, target: str, spec: TraceSpec) -> None:
        key = (target, spec)
        if key not in self.roots:
            self.roots[key] = TraceRoot(target, spec)
            if self._root_site is not None:
                self.root_sites[key] = self._root_site

    def _decorator_root(self, decorator: cst.BaseExpression, key: str) -> None:
        self._root_site = (decorator, True)
        spec = self._transform_spec(decorator)
        if spec is not None:
            self._add_root(key, spec)
            return

    def _transform_spec(self, expression: cst.BaseExpression) -> TraceSpec | None:
        """The TraceSpec of a decorator-like expression: `jax.jit`, `jax.jit(static_argnums=...)`,
        `partial(jax.jit, static_argnames=...)`; None when it is not a transform."""
        found = self._configured_transform(expression)
        return None if found is None else self._spec(*found)

    def _configured_transform(self, expression: cst.BaseExpression) -> tuple[jax_api.Transform, Sequence[cst.Arg]] | None:
        """The transform a decorator-like expression applies, with the arguments that configure it."""
        name = qualified_name(self.scope, expression)
        if name is not None:
            transform = self.transforms.get(name)
            return None if transform is None else (transform, ())
        if not isinstance(expression, cst.Call):
            return None
        name = self.records.call_names.get(id(expression))
        if name in jax_api.PARTIAL and expression.args and not expression.args[0].keyword:
            inner = qualified_name(self.scope, expression.args[0].value)
            transform = self.transforms.get(inner) if inner is not None else None
            return None if transform is None else (transform, expression.args[1:])
        transform = self.transforms.get(name) if name is not None else None
        if transform is not None and not any(a.keyword is None and not a.star for a in expression.args):
            return transform, expression.args
        return None

    @staticmethod
    def _unmapped_spec(transform: jax_api.Transform, spec: TraceSpec) -> TraceSpec | None:
        """`spec` when it is a per-example batching transform's that leaves some arguments unmapped (every
        example gets the same value: `vmap`'s `in_axes` None); None otherwise. (Under `pmap` an unmapped
        key may be meant: replicas initialised alike.)"""
        return spec if transform.in_axes == "in_axes" and not transform.caches and spec.unbatched_positions else None

    def _spec(self, transform: jax_api.Transform, args: Sequence[cst.Arg], first_position: int = 0) -> TraceSpec:
        """Read static arguments and `in_axes` from a transform's arguments; `first_position` is the
        positional index of `args[0]` in the transform's signature (the function is position 0)."""
        static_positions: set[int] = set()
        static_names: set[str] = set()
        unbatched: set[int] = set()
        differentiated: set[int] = {0} if transform.differentiates else set()
        readable = True
        position = first_position
        for arg in args:
            if arg.star:
                readable = False
                continue
            if arg.keyword is None:
                position += 1
                if position - 1 == transform.in_axes_position:
                    axes = unbatched_positions(arg.value)
                    readable &= axes is not None
                    unbatched.update(axes or ())
                elif position - 1 == 1 and transform.argnums is not None:  # `jax.grad(f, 1)`
                    numbers = literal_ints(arg.value)
                    readable &= numbers is not None
                    differentiated = set(numbers or ())
                continue
            keyword = arg.keyword.value
            if keyword in transform.static_argnums:
                numbers = literal_ints(arg.value)
                readable &= numbers is not None
                static_positions.update(numbers or ())
            elif keyword in transform.static_argnames:
                names = literal_strings(arg.value)
                readable &= names is not None
                static_names.update(names or ())
            elif keyword == transform.argnums:
                numbers = literal_ints(arg.value)
                readable &= numbers is not None
                differentiated = set(numbers or ())
            elif keyword == transform.in_axes:
                maps_all = transform.in_axes_call_maps_all and isinstance(arg.value, cst.Call)
                axes = () if maps_all else unbatched_positions(arg.value)
                readable &= axes is not None
                unbatched.update(axes or ())
        return TraceSpec(
            transform.name,
            transform.staged,
            frozenset(static_positions),
            frozenset(static_names),
            frozenset(unbatched),
            transform.array_params_only,
            readable,
            caches=transform.caches,
            differentiated_positions=frozenset(differentiated),
            differentiates_primals=transform.primals,
        )

    def _register_target(self, target: cst.BaseExpression, spec: TraceSpec) -> None:
        """Record that the callable `target` is traced by `spec` (call forms and lax bodies)."""
        for callable_, traced_by in self._peeled(target, spec):
            if isinstance(callable_, cst.Lambda):
                key = self.records.function_keys.get(id(callable_))
                if key is not None:
                    self._add_root(key, traced_by)
                continue
            if isinstance(callable_, cst.Call):
                continue  # what another call returns: not followed here
            method = self._method_key(callable_)
            if method is not None:
                self._add_root(method, traced_by.binding(self._self_bound(method)))
                continue
            name = qualified_name(self.scope, callable_)
            if name is not None and not name.startswith("builtins."):
                self._add_root(name, traced_by)

    def _peeled(self, target: cst.BaseExpression, spec: TraceSpec) -> Iterator[tuple[cst.BaseExpression, TraceSpec]]:
        """The callables a transform applied to `target` by `spec` traces, each with its spec:
        `partial(f, a, k=v)` is `f` with those parameters bound; a nested transform `jit(vmap(f))` is `f`
        under both. Any other call stands for itself (what it returns)."""
        if not isinstance(target, cst.Call):
            yield target, spec
            return
        if not target.args or target.args[0].keyword is not None or target.args[0].star:
            return
        name = self.records.call_names.get(id(target))
        first = target.args[0].value
        if name in jax_api.PARTIAL:
            rest = target.args[1:]
            if any(a.star for a in rest):
                return
            positional = sum(1 for a in rest if a.keyword is None)
            names = frozenset(a.keyword.value for a in rest if a.keyword is not None)
            falsy = frozenset(a.keyword.value for a in rest if a.keyword is not None and is_false_literal(a.value))
            yield from self._peeled(first, spec.binding(positional, names, falsy))
            return
        inner = self.transforms.get(name) if name is not None else None
        if inner is None:
            yield target, spec
            return
        yield from self._peeled(first, spec)
        yield from self._peeled(first, self._spec(inner, target.args[1:], first_position=1))

    def _self_bound(self, method: str) -> int:
        """How many leading parameters `self.method` binds: none for a `@staticmethod`."""
        return 0 if method in self.static_methods else 1

    def _method_key(self, target: cst.BaseExpression) -> str | None:
        """`self.method` inside a method resolves to the class's own method key."""
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
            return None
        scope = self.scope.function_scope()
        if scope.self_name is None or scope.class_scope is None or target.value.value != scope.self_name:
            return None
        binding = scope.class_scope.bindings.get(target.attr.value)
        if binding is not None and binding.kind is BindingKind.FUNCTION:
            return binding.target
        return None

