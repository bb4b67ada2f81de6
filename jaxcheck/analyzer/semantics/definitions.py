"""Definitions: imports, `def` and `class` statements, and the deferred reading of function bodies.

A `def` records its function summary (parameters, annotations, defaults), its decorators' trace roots
and custom derivative rules; its body is read after the enclosing scope is complete (pyflakes-style
deferral), in a scope whose parameters carry their own dependencies, within the function's budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.project import absolute_module
from jaxcheck.analyzer.semantics.bindings import CallableOrigin
from jaxcheck.analyzer.semantics.budget import BudgetSpent
from jaxcheck.analyzer.semantics.frameworks import frameworks_of
from jaxcheck.analyzer.semantics.interpreter import Env, FunctionNode, BRANCH, EXTERNAL_PREFIXES, PendingBody
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.records import TransformSite
from jaxcheck.analyzer.semantics.scopes import (
    VARIABLE,
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    qualified_name,
)
from jaxcheck.analyzer.semantics.stores import StoreRecorder
from jaxcheck.analyzer.semantics.summary import CallEdge, FunctionSummary, TraceSpec
from jaxcheck.analyzer.semantics.syntax import chain_root, dotted, is_docstring, is_false_literal
from jaxcheck.analyzer.semantics.values import NO_DEPS, PYTHON_CONTAINER, CallArguments, ParamDep, StagedDep, Value
from jaxcheck.analyzer.tree import child_nodes

_PLAIN_DECORATORS = frozenset({
    "builtins.staticmethod", "builtins.classmethod", "builtins.property", "functools.cache", "functools.lru_cache",
    "functools.cached_property", "typing.overload", "abc.abstractmethod",
})
"""Decorators that keep no function to call later: the function still runs only where it is called."""


class DefinitionReader(StoreRecorder):
    """Reads imports and definitions, and function bodies (see the module docstring)."""

    def _decorator_call(self, decorator: cst.Decorator, key: str) -> None:
        """`@compile` above `def step`, with `compile` a function of the project: it is called with `step`
        (an edge passing the function, so a project's own jit wrapper traces what it decorates)."""
        function = decorator.decorator
        name = qualified_name(self.scope, function)
        if name is None or name.startswith(EXTERNAL_PREFIXES) or not isinstance(function, (cst.Name, cst.Attribute)) \
                or isinstance(function, cst.Attribute) and function.attr.value in ("defjvp", "defvjp"):
            return  # (a custom derivative's rule is registered, see `_custom_rule`)
        self._add_edge(function, CallEdge(self.function_key, name, CallArguments((NO_DEPS,), callables=((0, key, 0),))))

    def _import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                module = dotted(alias.name)
                self.records.import_targets[id(alias)] = module
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.scope.bind(alias.asname.name.value, Binding(BindingKind.IMPORT, jax_api.canonical(module)))
                else:
                    top = module.partition(".")[0]
                    self.scope.bind(top, Binding(BindingKind.IMPORT, top))
            return
        base = self._import_base(node)
        if base is None:
            return
        self.records.import_modules[id(node)] = base
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            target = f"{base}.{name}" if base else name
            self.records.import_targets[id(alias)] = target
            self.scope.bind(local, Binding(BindingKind.IMPORT, jax_api.canonical(target)))

    def _import_base(self, node: cst.ImportFrom) -> str | None:
        module = dotted(node.module) if node.module is not None else ""
        return absolute_module(len(node.relative), module, self.package)

    def _function_def(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.FunctionDef)
        for decorator in node.decorators:
            self._eval(decorator.decorator)
        self._eval_parameter_defaults(node.params)
        self._note_annotations(node)
        key = self._new_function(node, node.name.value)
        if self.scope.kind is ScopeKind.CLASS and any(
            qualified_name(self.scope, d.decorator) == "builtins.staticmethod" for d in node.decorators
        ):
            self.static_methods.add(key)
        if any(self._is_memoizer(d.decorator) for d in node.decorators):
            self.functions[key] = replace(self.functions[key], memoized=True)
        if self.scope.kind is ScopeKind.CLASS and any(
            qualified_name(self.scope, d.decorator) in jax_api.ATTRIBUTE_DECORATORS for d in node.decorators
        ):
            self.attribute_methods.add(key)
            self.records.property_methods.add(key)
        self.scope.bind(node.name.value, Binding(BindingKind.FUNCTION, key))
        origin = CallableOrigin("def", tuple(self._loops))
        if self.scope.kind is not ScopeKind.CLASS:
            self.records.history.created(self.scope.key, node.name.value, origin)
        for decorator in node.decorators:
            self._decorator_root(decorator.decorator, key)
            if isinstance(decorator.decorator, cst.Attribute) and decorator.decorator.attr.value == "defjvp":
                self._custom_rule(decorator, qualified_name(self.scope, decorator.decorator.value), key, forward=False)
            configured = self._configured_transform(decorator.decorator)
            if configured is None:
                if qualified_name(self.scope, decorator.decorator) not in _PLAIN_DECORATORS:
                    self.records.escaping_functions.add(key)  # the decorator may keep it and call it any time
                    self._decorator_call(decorator, key)
                continue
            spec = self._spec(*configured)
            if self._records_transform_sites:
                site = TransformSite(self._site_function, tuple(self._loops), origin, spec.caches)
                self.records.transform_sites[id(decorator)] = site
                if site.function is not None:
                    self._kept_transforms.setdefault(site.function, {})[node.name.value] = id(decorator)
            unmapped = self._unmapped_spec(configured[0], spec)
            if unmapped is not None and isinstance(decorator.decorator, cst.Call):
                self.records.unbatched_targets[id(decorator.decorator)] = (key, unmapped)
        frameworks = self.framework_classes.get(self.scope.key, frozenset()) if self.scope.kind is ScopeKind.CLASS \
            else frozenset()
        for framework in frameworks:  # a Flax Linen module's `__call__`, `setup` and `@nn.compact` methods
            decorated = any(qualified_name(self.scope, d.decorator) == framework.traced_decorator for d in node.decorators)
            if decorated or node.name.value in framework.traced_methods:
                spec = TraceSpec(framework.traces_as, True, array_params_only=True, bound_positional=1)
                self._root_site = (node.name, False)
                self._add_root(key, spec)
        predicate = _predicate(node)
        if predicate is not None:
            self._predicates[key] = predicate
        rejected = self._tracer_rejecting_params(node)
        if rejected:
            self._rejects_tracers[key] = rejected
        self._pending.append(PendingBody(node, key, self.scope))

    def _class_def(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.ClassDef)
        for decorator in node.decorators:
            self._eval(decorator.decorator)
        bases: list[str | None] = []
        for base in node.bases:
            self._eval(base.value)
            bases.append(qualified_name(self.scope, base.value))
        for keyword in node.keywords:
            self._eval(keyword.value)
        key = self._child_key(node.name.value)
        self._note_class(key, node)
        self.scope.bind(node.name.value, Binding(BindingKind.CLASS, key))
        frameworks = frameworks_of(bases, self.framework_classes)
        if frameworks:
            self.framework_classes[key] = frameworks
        outer = self.scope
        self.scope = Scope(ScopeKind.CLASS, key, outer)
        try:
            self._suite(node.body)
        finally:
            self.scope = outer
        self._note_own_flattening(key, node)

    def _child_key(self, name: str) -> str:
        scope = self.scope.function_scope() if self.scope.kind is ScopeKind.COMPREHENSION else self.scope
        if scope.kind is ScopeKind.FUNCTION:
            return f"{scope.key}.<locals>.{name}"
        return f"{scope.key}.{name}"

    def _new_function(self, node: FunctionNode, name: str) -> str:
        existing = self.records.function_keys.get(id(node))
        if existing is not None:
            return existing
        key = self._child_key(name)
        if key in self.functions:
            suffix = 2
            while f"{key}#{suffix}" in self.functions:
                suffix += 1
            key = f"{key}#{suffix}"
        params = node.params
        positional = tuple(p.name.value for p in (*params.posonly_params, *params.params))
        keyword_only = tuple(p.name.value for p in params.kwonly_params)
        star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
        star_kw = params.star_kwarg.name.value if params.star_kwarg is not None else None
        annotated = [p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.annotation]
        array_params = frozenset(
            p.name.value for p in annotated if self._is_array_annotation(p.annotation.annotation)  # type: ignore[union-attr]
        )
        non_array_params = frozenset(
            p.name.value for p in annotated if self._is_non_array_annotation(p.annotation.annotation)  # type: ignore[union-attr]
        )
        self._container_params[key] = frozenset(
            p.name.value for p in annotated if self._is_container_annotation(p.annotation.annotation)  # type: ignore[union-attr]
        )
        self._note_param_classes(key, params)
        enclosing = self.scope.function_scope()
        parent = enclosing.key if enclosing.kind is ScopeKind.FUNCTION else None
        with_defaults = [p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.default]
        self.functions[key] = FunctionSummary(
            key, positional, keyword_only, star, star_kw, array_params, non_array_params, parent,
            jax_array_annotated=frozenset(
                p.name.value for p in annotated if self._is_jax_array_annotation(p.annotation.annotation)  # type: ignore[union-attr]
            ),
            defaults=frozenset(p.name.value for p in with_defaults),
            falsy_defaults=frozenset(p.name.value for p in with_defaults if p.default and is_false_literal(p.default)),
        )
        self.records.function_keys[id(node)] = key
        self.records.definition_order[key] = self._next_order()
        if self._loops:
            self.records.functions_in_loops.add(key)
        return key

    def _function_scope(self, node: FunctionNode, key: str, defining: Scope) -> Scope:
        """A fresh scope for `node`'s body whose parameters carry their own dependencies."""
        closure: tuple[Env, ...] = ()
        outer = defining.function_scope()
        if outer.kind is ScopeKind.FUNCTION:
            closure = (dict(outer.env), *outer.closure)
        scope = Scope(ScopeKind.FUNCTION, key, defining, closure=closure)
        function = self.functions[key]
        names = [*function.positional, *function.keyword_only]
        names += [n for n in (function.var_positional, function.var_keyword) if n is not None]
        classes = self._param_classes.get(key, {})
        scope.env[BRANCH] = Value(frozenset({StagedDep(key)}))
        for name in names:
            scope.bind(name, VARIABLE, Value(frozenset({ParamDep(key, name)}), instance=classes.get(name)))
        containers = {n for n in (function.var_positional, function.var_keyword) if n is not None}
        for name in containers | self._container_params.get(key, frozenset()):
            scope.bind(name, VARIABLE, Value(frozenset({ParamDep(key, name)}), PYTHON_CONTAINER))
        if defining.kind is ScopeKind.CLASS and function.positional and key not in self.static_methods:
            scope.self_name = function.positional[0]
            scope.class_scope = defining
        return scope

    def _function_body(self, pending: PendingBody) -> None:
        node = pending.node
        assert isinstance(node, cst.FunctionDef)
        self._function_bodies[pending.key] = node
        outer, branches, loops, empty, lookups = self.scope, self._branches, self._loops, self._empty_slots, self._lookups
        frames = self._loop_frames
        self.scope = self._function_scope(node, pending.key, pending.scope)
        self._branches, self._loops, self._empty_slots, self._lookups, self._loop_frames = [], [], [], {}, []
        enclosing = self._budget.enter_function()
        try:
            self._suite(node.body)
            self._note_reused_transforms(pending.key, node)
        except BudgetSpent:
            self._cut(pending.key, node)
        finally:
            self._budget.leave_function(enclosing)
            self.scope, self._branches, self._loops, self._empty_slots, self._lookups = outer, branches, loops, empty, lookups
            self._loop_frames = frames

    def _note_reused_transforms(self, key: str, node: cst.FunctionDef) -> None:
        """Mark the transform sites of function `key` whose result the function keeps and uses again (see
        :attr:`TransformSite.reused`): the name it is bound to is passed to a call that is no transform
        (`minimize(fun=step, ...)`), or called inside a loop of the function. One walk of the body, only
        for functions with such names."""
        kept = self._kept_transforms.pop(key, None)
        if not kept:
            return
        sites = {name: site for name, site_id in kept.items() if (site := self.records.transform_sites.get(site_id))}
        loops = {name: site.loops for name, site in sites.items()}
        for name in _reused_names(node.body, loops, lambda call: self.records.call_names.get(id(call)) in self.transforms):
            self.records.transform_sites[kept[name]] = replace(sites[name], reused=True)

    def _eval_parameter_defaults(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                self._eval(param.default)

    def _custom_rules(self, node: cst.Call) -> None:
        """`f.defjvp(rule)`, `f.defvjp(fwd, bwd)`: see :meth:`_custom_rule`."""
        assert isinstance(node.func, cst.Attribute)
        owner = qualified_name(self.scope, node.func.value)
        rules = [a.value for a in node.args if a.keyword is None and not a.star]
        for index, rule in enumerate(rules[:2] if node.func.attr.value == "defvjp" else rules[:1]):
            target = self._function_target(rule)
            if target is not None:
                self._custom_rule(rule, owner, target, forward=node.func.attr.value == "defvjp" and index == 0)

    def _custom_rule(self, site: cst.CSTNode, owner: str | None, rule: str, forward: bool) -> None:
        """A differentiation rule `rule` registered on `owner`, a `custom_jvp`/`custom_vjp` function of this
        module: JAX traces the rule in `owner`'s trace whenever it differentiates `owner` (under
        `jit(grad(...))` its arguments are tracers). An edge from `owner`, carried only where `owner` is
        under a differentiating transform (the union of its transforms: a function jitted for inference
        and differentiated eagerly elsewhere counts as both), passes `owner`'s values: to a
        forward rule (`fwd`) its own arguments, to a JVP or backward rule the non-differentiated ones
        first (`nondiff_argnums`), then the others' values in every remaining parameter."""
        function, callee = self.functions.get(owner or ""), self.functions.get(rule)
        spec = next((s for (target, s) in self.roots if target == owner and s.transform in jax_api.CUSTOM_DERIVATIVES),
                    None)
        if function is None or callee is None or spec is None or owner is None:
            return
        static = [p for i, p in enumerate(function.positional) if i in spec.static_positions or p in spec.static_names]
        if forward:
            positional = tuple(frozenset({ParamDep(owner, p)}) for p in function.positional)
        else:
            others = frozenset(ParamDep(owner, p) for p in function.parameters if p not in static)
            rest = max(len(callee.positional) - len(static), 0)
            positional = (*(frozenset({ParamDep(owner, p)}) for p in static), *([others] * rest))
        self._add_edge(site, CallEdge(owner, rule, CallArguments(positional[: len(callee.positional)]),
                                      differentiated=True))

    def _function_target(self, expression: cst.BaseExpression) -> str | None:
        """The function an argument names: a lambda, a `def` of this module, or an imported name."""
        if isinstance(expression, cst.Lambda):
            return self.records.function_keys.get(id(expression))
        root = chain_root(expression)
        if not isinstance(root, cst.Name) or not isinstance(expression, (cst.Name, cst.Attribute)):
            return None
        resolved = self.scope.resolve(root.value)
        if resolved is None or resolved[1].kind not in (BindingKind.FUNCTION, BindingKind.IMPORT):
            return None
        name = qualified_name(self.scope, expression)
        return name if name is not None and not name.startswith(EXTERNAL_PREFIXES) else None


def _predicate(node: cst.FunctionDef) -> tuple[str, cst.BaseExpression] | None:
    """(parameter, expression) of a function of one parameter whose body (after a docstring) is one
    `return expression` statement; None for any other function."""
    params = node.params
    if len(params.params) != 1 or params.posonly_params or params.kwonly_params or params.star_kwarg \
            or isinstance(params.star_arg, cst.Param) or node.decorators or not isinstance(node.body, cst.IndentedBlock):
        return None
    statements = [s for s in node.body.body if not is_docstring(s)]
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine) or len(statements[0].body) != 1:
        return None
    returned = statements[0].body[0]
    if not isinstance(returned, cst.Return) or returned.value is None:
        return None
    return params.params[0].name.value, returned.value


_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _reused_names(body: cst.BaseSuite, kept: dict[str, tuple[int, ...]], is_transform: Callable[[cst.Call], bool]) -> set[str]:
    """The `kept` names (each with the loops around the site that binds it) that `body` passes to a call
    that is no transform (as an argument or keyword), or calls inside a loop that is not around its site
    (a loop around the site makes a new function per iteration too). Iterative: deep code needs no deep
    recursion."""
    reused: set[str] = set()
    pending: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(body, ())]
    while pending:
        node, loops = pending.pop()
        if isinstance(node, cst.Call):
            name = node.func.value if isinstance(node.func, cst.Name) else None
            if name in kept and any(loop not in kept[name] for loop in loops):
                reused.add(name)
            if not is_transform(node):
                reused.update(arg.value.value for arg in node.args
                              if isinstance(arg.value, cst.Name) and arg.value.value in kept)
        inner = (*loops, id(node)) if isinstance(node, _LOOPS) else loops
        pending.extend((child, inner) for child in child_nodes(node))
    return reused
