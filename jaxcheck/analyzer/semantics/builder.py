"""The one traversal that builds a module's semantic model.

:class:`ModelBuilder` is the interpreter (its parts: :mod:`.interpreter`) with the collectors of this
model: it walks the module once, abstract-interpreting every statement and expression, and emits the
module's records (the values of expressions, sites, histories) and its :class:`ModuleSummary` (functions,
trace roots, call edges, exports). Function bodies are interpreted after the enclosing scope is complete
(pyflakes-style deferral), so helpers defined below their callers resolve.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics.budget import BudgetSpent
from jaxcheck.analyzer.semantics.callbacks import CallbackFunctions
from jaxcheck.analyzer.semantics.flow import FlowDriver
from jaxcheck.analyzer.semantics.parameter_use import KeyParameters
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind
from jaxcheck.analyzer.semantics.summary import FunctionSummary, ModuleSummary, TraceRoot
from jaxcheck.analyzer.semantics.values import UNKNOWN, Deps


class ModelBuilder(FlowDriver):
    """Interprets one module. Use :meth:`build`; the instance is single-use."""

    def __init__(self, module_name: str, path: str, extra_jit: Iterable[str] = (), package: str | None = None) -> None:
        super().__init__(module_name, path, extra_jit, package)
        self.collectors = (KeyParameters(self), CallbackFunctions(self))

    def build(self, module: cst.Module) -> tuple[ModuleRecords, ModuleSummary]:
        """Interpret `module`; return the node records and the module summary. Within the work budget
        (:mod:`.budget`): a function body (or the module-level code) that spends its budget is cut."""
        try:
            self._block(module.body)
        except BudgetSpent:
            self._cut(self.module_name, module)
        while self._pending:
            self._function_body(self._pending.popleft())
        self._wrapped_parameters()
        functions = {key: self._function_facts(f) for key, f in self.functions.items()}
        self.collectors = ()  # they refer back to this builder: no reference cycle outlives the build
        exports = {name: b.target for name, b in self.scope.bindings.items() if b.kind is not BindingKind.VARIABLE}
        roots = tuple(self._roots())
        summary = ModuleSummary(
            self.module_name, self.path, functions, roots, tuple(self.edges.values()), exports,
            frozenset(self.repeated_calls), self.enables_x64, self.wide_dtypes,
            unfollowed=tuple(sorted(self.unfollowed - set(self._transformed_params))),
            called_twice=frozenset(self.called_twice),
            cut=tuple(self.records.function_keys.get(id(cut), self.module_name) for cut in self.records.cut_nodes),
        )
        return self.records, summary

    def _wrapped_parameters(self) -> None:
        """A function that transforms a local wrapper calling its parameter (`def compile(fn): def
        wrapped(*a): return fn(*a); return jax.jit(wrapped)`) traces what its callers pass there, as if it
        transformed the parameter itself."""
        for local, spec, enclosing in self._transformed_locals:
            for owner, parameter in self._outer_parameter_calls.get(local, ()):
                if owner == enclosing:
                    self._transformed_params.setdefault(enclosing, []).append((parameter, spec))

    def _function_facts(self, function: FunctionSummary) -> FunctionSummary:
        """`function`'s summary completed with what the module's reading found: its returns, its
        transformed and called parameters, and the collectors' facts."""
        key = function.key
        function = replace(
            function, returns=self.returns.get(key, UNKNOWN).deps, return_elements=self._return_elements(key),
            transformed_params=tuple(self._transformed_params.get(key, ())),
            array_leaves=self._return_leaves.get(key, frozenset()),
            called_params=tuple(self._called_params.get(key, ())),
        )
        for collector in self.collectors:
            function = collector.function_facts(function)
        return function

    def _roots(self) -> Iterator[TraceRoot]:
        """The trace roots, those applied by a decorator marked; their sites go to the records (notes
        that explain a finding cite them; positions are computed only then)."""
        for key, root in self.roots.items():
            site = self.root_sites.get(key)
            if site is None:
                yield root
                continue
            self.records.root_sites[key] = site[0]
            yield replace(root, decorator=True) if site[1] else root

    def _return_elements(self, key: str) -> tuple[Deps, ...] | None:
        elements = self.tuple_returns.get(key)
        return None if elements is None else tuple(element.deps for element in elements)
