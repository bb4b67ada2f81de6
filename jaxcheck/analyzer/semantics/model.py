"""The semantic model facade: the only place rules ask "is this traced?"."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from jaxcheck.analyzer.semantics.bindings import ChangeSite
from jaxcheck.analyzer.semantics.builder import ModuleRecords, OuterName, TransformSite
from jaxcheck.analyzer.semantics.scopes import BindingKind
from jaxcheck.analyzer.semantics.solver import FunctionTrace, Solution
from jaxcheck.analyzer.semantics.summary import ModuleSummary
from jaxcheck.analyzer.semantics.values import (
    BOOL_MASK,
    FILESYSTEM_PATH,
    LOGGER,
    NUMPY_GENERATOR,
    PYTHON_CONTAINER,
    UNKNOWN,
    ParamDep,
    Value,
)

__all__ = ["FunctionTrace", "SemanticModel"]


class SemanticModel:
    """Answers questions about one module, given its records and a project-wide :class:`Solution`.

    Every answer errs towards silence: `is_traced` is True only when the value provably carries an
    abstract tracer (jit, vmap, pmap or a lax body) on some path.
    """

    def __init__(self, module: cst.Module, records: ModuleRecords, summary: ModuleSummary, solution: Solution) -> None:
        self.module = module
        self.records = records
        self.summary = summary
        self.solution = solution
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None

    def position(self, node: cst.CSTNode) -> CodeRange:
        """The node's range (1-based lines, 0-based columns), computed for the whole file on first use."""
        if self._positions is None:
            self._positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return self._positions[node]

    def function_key(self, node: cst.FunctionDef | cst.Lambda) -> str | None:
        """The key of a function or lambda node of this module."""
        return self.records.function_keys.get(id(node))

    def trace_of(self, function_key: str | None) -> FunctionTrace | None:
        """How the function is traced, or None when it is never traced."""
        return None if function_key is None else self.solution.trace_of(function_key)

    def enclosing_trace(self, function_key: str | None) -> FunctionTrace | None:
        """The trace of `function_key` or, when it is not traced, of the nearest traced function it is
        nested in (a closure of a jitted function sees its tracers)."""
        while function_key is not None:
            trace = self.solution.trace_of(function_key)
            if trace is not None:
                return trace
            function = self.solution.functions.get(function_key)
            function_key = function.parent if function is not None else None
        return None

    def value_of(self, node: cst.BaseExpression) -> Value:
        """The abstract value recorded for an expression."""
        return self.records.values.get(id(node), UNKNOWN)

    def is_traced(self, node: cst.BaseExpression) -> bool:
        """True when `node` evaluates to an abstract tracer on some traced path."""
        value = self.records.values.get(id(node))
        return value is not None and bool(value.deps) and self.solution.is_traced(value.deps)

    def traced_parameter(self, node: cst.BaseExpression, function_key: str | None) -> str | None:
        """The parameter of `function_key` that `node` is traced through, when it is the only source
        (`n > 0` for a parameter `n`, not `jnp.sum(x) > 0`): a candidate for `static_argnames`."""
        value = self.records.values.get(id(node))
        if value is None or function_key is None or len(value.deps) != 1:
            return None
        (dep,) = value.deps
        if isinstance(dep, ParamDep) and dep.function == function_key:
            if dep.name in self.solution.traced_params.get(function_key, ()):
                return dep.name
        return None

    def is_bool_mask(self, node: cst.BaseExpression) -> bool:
        """True when `node` is a traced boolean array (a comparison, `jnp.isnan(x)`, `m1 & m2`)."""
        return bool(self.value_of(node).flags & BOOL_MASK) and self.is_traced(node)

    def is_python_container(self, node: cst.BaseExpression) -> bool:
        """True when `node` is known to be a Python list, tuple, dict or set (not an array)."""
        return bool(self.value_of(node).flags & PYTHON_CONTAINER)

    def call_name(self, node: cst.Call) -> str | None:
        """The canonical qualified name of the called function (`jax.numpy.nonzero`, `builtins.int`)."""
        return self.records.call_names.get(id(node))

    # ----------------------------------------------------------------- names, bindings, objects
    def outer_name(self, node: cst.Name) -> OuterName | None:
        """For a name read inside a function: the enclosing function or module scope that binds it."""
        return self.records.outer_names.get(id(node))

    def outer_state(self, node: cst.Name) -> OuterName | None:
        """For a name read inside a function: its binding when that lives outside every traced function
        around the read (module level, or an untraced enclosing function), else None. A variable of an
        enclosing traced function is created by the same trace, so it is not outer state."""
        outer = self.records.outer_names.get(id(node))
        if outer is None or outer.kind is not BindingKind.VARIABLE:
            return None
        if not outer.module_level and self.enclosing_trace(outer.scope) is not None:
            return None
        return outer

    def change_of(self, outer: OuterName, name: str, reader: str | None) -> ChangeSite | None:
        """Where the outer variable `name`, read by function `reader`, is rebound or its object mutated.

        A module-level variable may change anywhere after import. A variable of an enclosing function
        only matters when it changes after the nested function reading it was created: a closure made
        after the last change is recreated (and retraced) on every call of its enclosing function."""
        after = -1
        if not outer.module_level:
            key = reader
            while key is not None:
                function = self.solution.functions.get(key)
                if function is None or function.parent == outer.scope:
                    break
                key = function.parent
            if key is not None:
                after = self.records.definition_order.get(key, -1)
        return self.records.history.change_of(outer.scope, name, after)

    def is_mutated_here(self, node: cst.Name) -> bool:
        """True when this read of a name is the object of a mutation (`x.append(v)`, `x[k] = v`)."""
        return id(node) in self.records.mutated_names

    def recreated_between(self, function_key: str | None, owner: str) -> bool:
        """True when `function_key`, or a function between it and the enclosing `owner` scope, is
        created inside a loop: a new function object (and a new trace) on every iteration."""
        while function_key is not None and function_key != owner:
            if function_key in self.records.functions_in_loops:
                return True
            function = self.solution.functions.get(function_key)
            function_key = function.parent if function is not None else None
        return False

    def is_outer_write(self, node: cst.Name) -> bool:
        """True for an assignment target written through a `global` or `nonlocal` declaration."""
        return id(node) in self.records.outer_writes

    def is_self(self, node: cst.Name) -> bool:
        """True for a read of a method's `self` parameter (Flax modules excepted: their `setup` assigns)."""
        return id(node) in self.records.self_loads

    def is_logger(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & LOGGER)

    def is_numpy_generator(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & NUMPY_GENERATOR)

    def is_filesystem_path(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & FILESYSTEM_PATH)

    # -------------------------------------------------------------------------- transform sites
    def transform_site(self, node: cst.BaseExpression) -> TransformSite | None:
        """Where and to what a transform call (or decorator) inside a function is applied."""
        return self.records.transform_sites.get(id(node))

    def is_called_immediately(self, node: cst.Call) -> bool:
        """True for a transform call whose result is called right away: `jax.jit(f)(x)`."""
        return id(node) in self.records.called_transforms
