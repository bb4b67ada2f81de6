"""The semantic model facade: the only place rules ask "is this traced?"."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from math import prod

import libcst as cst
from libcst.metadata import CodeRange

from jaxcheck.analyzer.positions import node_ranges
import jaxcheck.analyzer.semantics.jax_api as jax_api

from jaxcheck.analyzer.semantics.bindings import ChangeSite
from jaxcheck.analyzer.semantics.records import ModuleRecords, OuterName, Receiver, TransformSite
from jaxcheck.analyzer.semantics.syntax import argument, at_receiver, chain_root, literal_ints
from jaxcheck.analyzer.semantics.objects import CONSTRUCTORS
from jaxcheck.analyzer.semantics.prng import CarryShape, KeyReuse, find_key_reuses, fixed_seed_key
from jaxcheck.analyzer.semantics.scopes import BindingKind
from jaxcheck.analyzer.semantics.shapes import OutOfBounds, out_of_bounds
from jaxcheck.analyzer.semantics.solver import (
    ChainLink, FunctionTrace, Read, ReadKind, Solution,
)
from jaxcheck.analyzer.semantics.summary import CallEdge, FunctionSummary, ModuleSummary, TraceSpec
from jaxcheck.analyzer.semantics.values import (
    BOOL_MASK,
    FILESYSTEM_PATH,
    GRADIENT_STOPPED,
    JAX_ARRAY,
    Returned,
    LOGGER,
    NUMPY_ARRAY,
    NUMPY_GENERATOR,
    SEEDED_GENERATOR,
    PYTHON_CONTAINER,
    UNKNOWN,
    CallDep,
    Dep,
    Deps,
    ParamDep,
    Value,
    nested_deps,
)

__all__ = ["FunctionTrace", "KeyReuse", "OutOfBounds", "SemanticModel", "TraceNote"]


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
        self._ranges: dict[int, CodeRange] = {}
        self._enclosing_traces: dict[str | None, FunctionTrace | None] = {}
        self._refs: set[tuple[str, str]] | None = None
        self._drawing_callers: set[str] | None = None
        self._made_in_call: dict[str, bool] = {}
        self._edges_by_callee: dict[str, list[tuple[CallEdge, cst.CSTNode]]] | None = None
        self._referenced: frozenset[str] | None = None
        self.reads: set[Read] = set()
        """What this model has asked the solve beyond its own functions' facts (see :class:`Read` and
        `Solution.lint_signature`)."""
        self._asked_deps: set[Dep] = set()

    def _named(self, name: str, facet: ReadKind = "lookup") -> FunctionSummary | None:
        """The project function `name` refers to, recorded in :attr:`reads` with the `facet` of it the
        caller reads (`draws`, `staged`; `lookup` for all of it; `_returns_array` records its own
        `leaves` lookups)."""
        self.reads.add(Read(facet, name))
        return self.solution.function_named(name)

    def _asked(self, deps: Deps) -> Deps:
        """`deps`, about to be evaluated by the solve: the functions of other modules whose return
        values they may hold (through what this module's functions return, too) are recorded in
        :attr:`reads` (`returns`), as what the solve says they return decides the answer."""
        pending = list(nested_deps(deps))
        while pending:
            dep = pending.pop()
            if dep in self._asked_deps:
                continue
            self._asked_deps.add(dep)
            if not isinstance(dep, CallDep):
                continue
            own = self.summary.functions.get(dep.callee)
            if own is None:
                self.reads.add(Read("returns", dep.callee))
                continue
            for returned in (own.returns, *(own.return_elements or ())):
                pending += nested_deps(returned)
        return deps

    def _runs_from_elsewhere(self, function: str) -> bool:
        """`Solution.runs_from_elsewhere` for code outside this module (recorded in :attr:`reads`)."""
        self.reads.add(Read("elsewhere", function))
        return self.solution.runs_from_elsewhere(function, {*self.summary.functions, self.summary.module})

    def _reaches(self, callee: str, function: str) -> bool:
        """`Solution.reaches` (recorded in :attr:`reads`)."""
        self.reads.add(Read("reaches", callee))
        return self.solution.reaches(callee, function)

    def locate(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Compute the ranges of `nodes` in one pass over the file; :meth:`position` then reads them."""
        missing = [node for node in nodes if id(node) not in self._ranges]
        if missing:
            self._ranges.update(node_ranges(self.module, missing))

    def position(self, node: cst.CSTNode) -> CodeRange:
        """The node's range (1-based lines, 0-based columns); one pass over the file when not located yet."""
        if id(node) not in self._ranges:
            self.locate([node])
        return self._ranges[id(node)]

    def function_key(self, node: cst.FunctionDef | cst.Lambda) -> str | None:
        """The key of a function or lambda node of this module."""
        return self.records.function_keys.get(id(node))

    def trace_of(self, function_key: str | None) -> FunctionTrace | None:
        """How the function is traced, or None when it is never traced."""
        return None if function_key is None else self.solution.trace_of(function_key)

    def runs_traced(self, statement: cst.CSTNode) -> bool:
        """Whether `statement` (or a read of an outer variable) runs in some way its function is traced:
        False only in a branch whose guards no trace admits (`if debug:` where every trace passes
        `debug=False`)."""
        branch = self.records.branch_guards.get(id(statement))
        return branch is None or self.solution.runs_traced(branch)

    @property
    def guarded_statements(self) -> Collection[int]:
        """The ids of the statements in guarded branches (see :meth:`runs_traced`)."""
        return self.records.branch_guards.keys()

    def enclosing_trace(self, function_key: str | None) -> FunctionTrace | None:
        """The trace of `function_key` or, when it is not traced, of the nearest traced function it is
        nested in (a closure of a jitted function sees its tracers)."""
        if function_key in self._enclosing_traces:
            return self._enclosing_traces[function_key]
        trace = self.trace_of(self._traced_around(function_key))
        self._enclosing_traces[function_key] = trace
        return trace

    def trace_notes(self, function_key: str | None, node: cst.CSTNode | None = None) -> tuple[TraceNote, ...]:
        """Why code in `function_key` runs under a trace, as notes: the trace root, then each call from
        a traced function on the way to the traced function `function_key` is (or is nested in). With
        `node`, an expression traced through one parameter, the chain follows that parameter. Built on
        demand from the solve's witnesses (only for reported findings); located later, with the finding
        (:meth:`site_of`), or by reading the other file when the note lies there."""
        key = function_key
        while key is not None and key not in self.records.host_functions and self.solution.trace_of(key) is None:
            function = self.solution.functions.get(key)
            key = function.parent if function is not None else None
        if key is None or key in self.records.host_functions:
            return ()
        param = None
        if key == function_key and isinstance(node, cst.BaseExpression):
            param = self.traced_parameter(node, key)
        return tuple(_chain_note(link) for link in self.solution.trace_chain(key, param))

    def site_of(self, note: TraceNote) -> cst.CSTNode | None:
        """The node of this module a note of :meth:`trace_notes` cites, if it lies here."""
        return site_in(self.records, note) if note.path == self.summary.path else None

    def value_of(self, node: cst.BaseExpression) -> Value:
        """The abstract value recorded for an expression."""
        return self.records.values.get(id(node), UNKNOWN)

    def is_traced(self, node: cst.BaseExpression) -> bool:
        """True when `node` evaluates to an abstract tracer on some traced path."""
        value = self.records.values.get(id(node))
        return value is not None and bool(value.deps) and self.solution.is_traced(self._asked(value.deps))

    def holds_tracer(self, node: cst.BaseExpression) -> bool:
        """True when `node` holds a tracer on some traced path: it is traced, flows from a parameter a
        differentiating transform gives a tracer (`grad`), or an opaque call (`optax.global_norm(g)`,
        `net.apply(w, x)`) returned it given a value that holds one. Storing such a value outside the
        trace leaks it; branching on it is not provably wrong."""
        value = self.records.values.get(id(node))
        return value is not None and bool(value.deps) and self.solution.holds_tracer(self._asked(value.deps))

    def is_differentiated(self, node: cst.BaseExpression) -> bool:
        """True when `node` is computed from a parameter given a differentiating transform's tracer
        (`jax.grad`, `jvp`): `if`, `int()` and `.item()` work on it, `float()`, `.tolist()` and NumPy raise."""
        value = self.records.values.get(id(node))
        return value is not None and bool(value.deps) and not value.flags & GRADIENT_STOPPED \
            and self.solution.is_differentiated(value.deps)

    def traced_parameter(self, node: cst.BaseExpression, function_key: str | None) -> str | None:
        """The parameter of `function_key` that `node` is traced through, when it is the only source
        (`n > 0` for a parameter `n`, not `jnp.sum(x) > 0`): a candidate for `static_argnames`."""
        value = self.records.values.get(id(node))
        if value is None or function_key is None or len(value.deps) != 1:
            return None
        (dep,) = value.deps
        if isinstance(dep, ParamDep) and dep.function == function_key:
            if dep.name in self.solution.state_of(function_key).traced_params:
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

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        """The canonical qualified name a name or dotted attribute refers to through an import (`jnp.float64`
        -> `jax.numpy.float64`, in code or in an annotation); None for anything else (a local variable,
        a definition of this module, a string annotation)."""
        return self.records.references.get(id(node))

    def import_target(self, alias: cst.ImportAlias) -> str | None:
        """The qualified name an import alias imports, as written (`from jax import tree_map` ->
        `jax.tree_map`; `import jax.experimental.maps` -> `jax.experimental.maps`; a private
        `jax._src...` name stays private)."""
        return self.records.import_targets.get(id(alias))

    def import_module(self, node: cst.ImportFrom) -> str | None:
        """The absolute module of `from M import ...` (None when a relative import escapes the top)."""
        return self.records.import_modules.get(id(node))

    def runs_jax_work(self, node: cst.Call) -> bool:
        """True when the call dispatches JAX computation that runs asynchronously and returns arrays
        (one, or a tuple of them) before it finishes: a `jax.numpy`/`lax`/`random`/`nn`/`scipy` function
        other than key management (`jax.random.split`, `fold_in`: not work worth timing), a call of a function a
        transform is applied to (`@jax.jit`), of a name bound to a transform's result (`step =
        jax.jit(f)`), or of a transform's result at once (`jax.jit(f)(x)`)."""
        name = self.call_name(node)
        if name is not None and jax_api.dispatches_work(name):
            return True
        if id(node) in self.records.transformed_calls or id(node.func) in self.records.called_transforms:
            return True
        function = self._named(name, "staged") if name is not None else None
        trace = self.solution.trace_of(function.key) if function is not None else None
        return trace is not None and trace.direct and trace.staged

    def project_enables_x64(self) -> bool:
        """True when some module of the project (as far as this run sees it) may turn on 64-bit mode."""
        self.reads.add(Read("x64"))
        return self.solution.x64_enabled or self.summary.enables_x64

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

    def change_of(self, outer: OuterName, name: str, reader: str | None, read: cst.Name | None = None) -> ChangeSite | None:
        """Where the outer variable `name`, read by traced function `reader`, changes so that the
        compiled program can go stale (see :mod:`.program_order`); None when it cannot.

        A variable of an enclosing function only matters when it changes after the nested function
        reading it was created. With `read` (`cfg.alpha`), a store to another attribute
        (`cfg.beta = 1`) is no change of what is read."""
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
        path = self.records.read_paths.get(id(read)) if read is not None else None
        order = self.records.program_order
        for change in self.records.history.changes_of(outer.scope, name, after):
            if path is not None and change.path is not None and change.path != path:
                continue
            runs_later = outer.module_level and reader is not None and self._runs_from_elsewhere(reader)
            if reader is None or order.goes_stale(change, outer.scope, runs_later, reader, self._reaches,
                                                  outer.module_level, elsewhere=self._runs_from_elsewhere,
                                                  escaping=self.records.escaping_functions):
                return change
        return None

    def change_after(self, outer: OuterName, change: ChangeSite, reader: str) -> cst.CSTNode | None:
        """The call in the variable's own scope after which `change` makes `reader`'s program stale (it
        may trace `reader` first), when program order decides it; None otherwise."""
        event = self.records.program_order.traced_before(change, outer.scope, reader, self._reaches)
        return event.node if event is not None else None

    def outer_variable_reads(self) -> list[tuple[cst.Name, str]]:
        """Every read of a variable bound outside the reading function, with that function's key."""
        return self.records.outer_variable_reads

    def referenced_names(self) -> frozenset[str]:
        """The qualified names of every imported reference and every resolved call in the module."""
        if self._referenced is None:
            self._referenced = frozenset(self.records.references.values()) | frozenset(self.records.call_names.values())
        return self._referenced

    def name_assignments(self) -> list[tuple[tuple[str, ...], cst.BaseExpression]]:
        """Every assignment to plain names in the module, any scope: (names, value) (see `ModuleRecords`)."""
        return self.records.name_assignments

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

    def writes_outside_trace(self, node: cst.Name, writer: str | None) -> bool:
        """For a target that function `writer` assigns through `global`/`nonlocal`: whether the variable
        outlives the trace that runs the assignment. It does unless `writer` runs in the trace of an
        enclosing traced function (no transform of its own: a callback it runs, a closure it calls or
        hands to `jax.tree.map`) and the variable belongs to that traced function or to one nested in
        it: the same trace creates and writes it."""
        owner = self.records.outer_writes.get(id(node))
        trace = self.trace_of(writer)
        if owner is None or owner.module_level or (trace is not None and trace.direct):
            return True
        function = self.solution.functions.get(writer) if trace is not None and writer is not None else None
        traced = self._traced_around(function.parent if function is not None else writer)
        return traced is None or traced != self._traced_around(owner.scope)

    def _traced_around(self, function_key: str | None) -> str | None:
        """The key of the traced function `function_key` is or is nested in, the nearest; None when there
        is none, or a host callback comes first (it runs on every call, with concrete values)."""
        while function_key is not None and function_key not in self.records.host_functions:
            if self.solution.trace_of(function_key) is not None:
                return function_key
            function = self.solution.functions.get(function_key)
            function_key = function.parent if function is not None else None
        return None

    def is_self(self, node: cst.Name, function: str | None) -> bool:
        """True for a read of a method's `self` parameter (Flax modules excepted: their `setup` assigns), in
        `function`, unless that method only runs on objects made in the call running it (see
        :meth:`receiver_made_in_call`): its object then lives and dies inside one trace."""
        return id(node) in self.records.self_loads and not (function is not None and self.receiver_made_in_call(function))

    def receiver_made_in_call(self, method: str) -> bool:
        """Whether every object `method` runs on is made inside the call that runs it (so inside the
        trace, when one runs it): it is a constructor, or each visible call of it is on an object its
        caller made (`game = Game(s); game.step()`), or on the calling method's own object or a new object
        that object keeps (`self.ball.move()`), from a method of which the same holds. Not a method a
        transform is applied to or that is read as a value (it may run on any object), nor one called from
        another module. Cost: one walk of this module's call edges per method asked (memoised)."""
        known = self._made_in_call.get(method)
        if known is None:
            known = self._made_in_call[method] = self._receiver_made_in_call(method, frozenset())
        return known

    def _receiver_made_in_call(self, method: str, seen: frozenset[str]) -> bool:
        if method.rpartition(".")[2] in ("__init__", "__post_init__"):
            return True
        if method in seen:
            return True  # a cycle of calls brings in no object from outside
        if method in self.records.escaping_functions or self.solution.state_of(method).root:
            return False
        self.reads.add(Read("callers", method))
        callers = self.solution.callers_of(method)
        sites = self._edges_to().get(method, [])
        if not sites or {edge.caller for edge, _ in sites} != callers:
            return False
        for edge, site in sites:
            receiver = self.records.call_receivers.get(id(site))
            if receiver is Receiver.MADE_HERE:
                continue
            if receiver is None or not self._receiver_made_in_call(edge.caller, seen | {method}):
                return False
        return True

    def _edges_to(self) -> dict[str, list[tuple[CallEdge, cst.CSTNode]]]:
        """This module's call edges by callee (built once)."""
        if self._edges_by_callee is None:
            self._edges_by_callee = {}
            for edge, site in self.records.edge_sites:
                self._edges_by_callee.setdefault(edge.callee, []).append((edge, site))
        return self._edges_by_callee

    def lifts_state(self, target: cst.BaseExpression, function_key: str | None) -> bool:
        """True for a store to a Variable's value of a Flax NNX object (`self.count.value += 1`,
        `self.count[...] += 1`) in a method traced only by NNX transforms: they carry the Variable updates
        of the objects they are given out of the trace, once per call. Other state of the object (a plain
        list) is not carried. (A module reached by closure instead makes NNX raise `TraceContextError`,
        loudly; the model does not tell the two apart.)"""
        steps: list[str] = []
        node = target
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            if isinstance(node, cst.Attribute):
                steps.append(node.attr.value)
            else:
                whole = len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and isinstance(
                    node.slice[0].slice.value, cst.Ellipsis)
                steps.append("[...]" if whole else "[]")
            node = node.value
        trace = self.trace_of(function_key)
        return (isinstance(node, cst.Name) and id(node) in self.records.nnx_self_loads
                and any(step in ("value", "[...]") for step in steps[:-1]) and trace is not None
                and trace.transforms <= jax_api.STATE_LIFTING_TRANSFORMS)

    def is_logger(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & LOGGER)

    def is_numpy_array(self, node: cst.BaseExpression) -> bool:
        """True when `node` is a NumPy array made from concrete values (`np.eye(4)`, a module-level table)."""
        return bool(self.value_of(node).flags & NUMPY_ARRAY) and self._facts_hold(node)

    def _facts_hold(self, node: cst.BaseExpression) -> bool:
        """False for an outer variable some function rebinds through `global`/`nonlocal`
        (`global TABLE; TABLE = jnp.asarray(TABLE)`), or for a part of an outer object some function
        changes (`TABLES["a"] = jnp.asarray(...)`): what the model knew of its type may no longer hold."""
        root = chain_root(node) if isinstance(node, (cst.Subscript, cst.Attribute)) else node
        if not isinstance(root, cst.Name):
            return True
        outer = self.records.outer_names.get(id(root))
        if outer is None:
            return True
        history = self.records.history
        if history.written_from_function(outer.scope, root.value):
            return False
        return root is node or all(change.scope == outer.scope for change in history.changes_of(outer.scope, root.value))

    def is_numpy_generator(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & NUMPY_GENERATOR)

    def is_fresh_seeded_generator(self, node: cst.BaseExpression) -> bool:
        """A NumPy generator seeded explicitly and made by the code reading it (not one kept outside
        every trace around the read): each trace makes it anew and draws the same numbers from it."""
        if not self.value_of(node).flags & SEEDED_GENERATOR:
            return False
        return not (isinstance(node, cst.Name) and self.outer_state(node) is not None)

    def is_filesystem_path(self, node: cst.BaseExpression) -> bool:
        return bool(self.value_of(node).flags & FILESYSTEM_PATH)

    # -------------------------------------------------------------------------- transform sites
    def transform_site(self, node: cst.BaseExpression) -> TransformSite | None:
        """Where and to what a transform call (or decorator) inside a function is applied."""
        return self.records.transform_sites.get(id(node))

    def repeats(self, loops: Sequence[int]) -> bool:
        """Whether code inside `loops` (ids, as in :class:`TransformSite`) runs repeatedly: some of them
        is not a loop over a fixed list of configurations (see `ModuleRecords.configuration_loops`)."""
        return any(loop not in self.records.configuration_loops for loop in loops)

    def runs_repeatedly(self, function_key: str | None) -> bool:
        """True when the function evidently runs more than once: it is called inside a loop, or by a
        function that is (a one-shot `main()`, test or constructor is not)."""
        return function_key is not None and function_key in self.solution.repeated

    def runs_more_than_once(self, function_key: str | None) -> bool:
        """True when the function evidently runs more than once: it runs repeatedly, or one run of a caller
        calls it twice (`a = f(x); b = f(y)`), or a function that does so calls it."""
        return function_key is not None and function_key in self.solution.rerun

    def catches_concretization(self, node: cst.Try | cst.TryStar) -> bool:
        """Whether the handlers of `try` statement `node` catch the error a concretization raises on a
        tracer (`except TypeError:`, `except jax.errors.ConcretizationTypeError:`) without re-raising it."""
        return id(node) in self.records.concretization_caught

    def is_called_immediately(self, node: cst.Call) -> bool:
        """True for a transform call whose result is called right away: `jax.jit(f)(x)`."""
        return id(node) in self.records.called_transforms

    def is_ref(self, node: cst.BaseExpression) -> bool:
        """True when `node` is a parameter of a Pallas kernel or scoped body (a mutable Ref), or of a
        function of this module that a kernel passes one of its Refs to."""
        param = self._parameter(self.value_of(node))
        return param is not None and (param.function, param.name) in self._ref_parameters()

    def _ref_parameters(self) -> set[tuple[str, str]]:
        if self._refs is None:
            functions = self.solution.functions
            refs = {(k, p) for k in self.records.ref_kernels if k in functions for p in functions[k].parameters}
            changed = True
            while changed:
                changed = False
                for edge in self.summary.edges:  # refs given to another module's function end there
                    callee = functions.get(edge.callee)
                    if callee is None or not any(f == edge.caller for f, _ in refs):
                        continue
                    for name, deps in edge.arguments.bind(callee).items():
                        passes_ref = any(isinstance(d, ParamDep) and (d.function, d.name) in refs for d in deps)
                        if passes_ref and (callee.key, name) not in refs:
                            refs.add((callee.key, name))
                            changed = True
            self._refs = refs
        return self._refs

    def is_jax_array(self, node: cst.BaseExpression) -> bool:
        """True when `node` is known to be a JAX array, traced or not: a JAX array call's result, an
        `.at[...]` update, arithmetic or indexing on one, or a parameter annotated as an array or passed
        one by some visible call, or what a project function returns where every `return` holds one
        (`init(k)["enc"]["w"]` of `return {"enc": {"w": jax.random.normal(k, s)}}`)."""
        value = self.value_of(node)
        if not self._facts_hold(node):
            return False
        if value.flags & JAX_ARRAY or self._is_array_attribute(node):
            return True
        if value.returned is not None and self._returns_array(value.returned):
            return True
        param = self._parameter(value)
        if param is None or self.is_ref(node):
            return False
        function = self.solution.functions.get(param.function)
        if function is not None and param.name in function.jax_array_annotated:
            return True
        return param.name in self.solution.state_of(param.function).jax_array_params

    def _returns_array(self, returned: Returned, seen: frozenset[Returned] = frozenset()) -> bool:
        """Whether every `return` of `returned.function` holds a JAX array at `returned.path` or above it
        (an item of an array is an array), following returns of other project functions."""
        self.reads.add(Read("leaves", returned.function))
        function = self.solution.functions.get(returned.function)
        if function is None or returned in seen:
            return False
        path = returned.path
        for leaf in function.array_leaves:
            if path[: len(leaf.path)] != leaf.path:
                continue
            if leaf.callee is None:
                return True
            inner = Returned(leaf.callee, (*leaf.callee_path, *path[len(leaf.path) :]))
            if self._returns_array(inner, seen | {returned}):
                return True
        return False

    def array_shape(self, node: cst.BaseExpression) -> tuple[int, ...] | None:
        """The shape of `node` when it is a JAX array whose shape is certain here: built from literals
        (`jnp.zeros((5,))`, `jnp.arange(5)`, `jnp.array([...])`, `jnp.eye(3)`, `.reshape(2, -1)`,
        `zeros_like`, elementwise arithmetic and `.at[]` updates of those) on every path to `node`, and
        for a name, never rebound by a function through `global`/`nonlocal`. None otherwise: parameters,
        NumPy arrays, closures, attributes and call results have no certain shape."""
        value = self.value_of(node)
        if value.shape is None or not value.flags & JAX_ARRAY:
            return None
        if isinstance(node, cst.Name):
            owner = self.records.shaped_names.get(id(node))
            if owner is None or self.records.history.written_from_function(*owner):
                return None
        return value.shape

    def out_of_bounds(self, array: cst.BaseExpression, elements: Sequence[cst.SubscriptElement]) -> list[OutOfBounds]:
        """The constant indices (and slice starts) of `array[elements]` (or `array.at[elements]`) that
        are out of range of an axis of `array`'s certain shape; empty when the shape is not certain."""
        shape = self.array_shape(array)
        return [] if shape is None else out_of_bounds(shape, elements)

    def taken_out_of_bounds(self, call: cst.Call) -> OutOfBounds | None:
        """`jnp.take(a, i)` (or with `axis=k`) with a constant index outside `a`'s certain shape (the
        flattened array without an axis), and neither `mode=` nor `fill_value=`: JAX fills the read with
        NaN (an extreme value for integers) and raises nothing (checked under JAX 0.10.2)."""
        if self.call_name(call) != "jax.numpy.take" or any(
                arg.keyword is not None and arg.keyword.value in ("mode", "fill_value") or arg.star for arg in call.args):
            return None
        array, index, axis = argument(call, 0, ("a",)), argument(call, 1, ("indices",)), argument(call, 2, ("axis",))
        shape = self.array_shape(array) if array is not None else None
        indices = literal_ints(index) if isinstance(index, (cst.Integer, cst.UnaryOperation)) else None
        if shape is None or indices is None or index is None:
            return None
        flattened = axis is None or isinstance(axis, cst.Name) and axis.value == "None"
        if axis is None or flattened:
            axis_number, length = 0, prod(shape)
        else:
            axes = literal_ints(axis)
            if axes is None or len(axes) != 1 or not -len(shape) <= axes[0] < len(shape):
                return None
            axis_number = axes[0] % len(shape)
            length = shape[axis_number]
        return None if -length <= indices[0] < length else \
            OutOfBounds(index, indices[0], axis_number, length, flattened=flattened)

    def attribute_change(self, node: cst.Attribute, reader: str | None) -> cst.CSTNode | None:
        """A store that can change what traced code (function `reader`) read through `node` after the trace
        froze it: `node` is `self.attr`/`cls.attr` on a concrete (static) receiver, or `C.attr` on a class of
        this module; the class hashes by identity (so the cache key stays the same), and a method other
        than a constructor, or any function, stores the attribute, or module code does between calls that
        may trace `reader` (see :mod:`.program_order`)."""
        owner = self.records.attribute_owners.get(id(node))
        if owner is None or owner[0] not in self.records.identity_hashed or self.is_traced(node.value):
            return None
        if id(node) not in self.records.receiver_reads:
            return None  # other objects are outer variables: stale-global reads judge them
        new = reader is not None and self._reads_own_object(node, reader) and self.receiver_made_in_call(reader)
        for store, function in self.records.attribute_changes.get(owner, ()):
            if new and not _stores_on_class(store, owner[0]):
                continue  # the object read was made inside the trace: only its class's attribute is shared
            if not self._runs_only_while_constructing(function):
                return store
        if new:
            return None  # module code changes module-level objects, not one made inside the trace
        order, module = self.records.program_order, self.summary.module
        for change, others in self.records.module_attribute_changes.get(owner, ()) if reader is not None else ():
            assert reader is not None
            # an object module code made is used by module code: only its later calls can reuse the program
            holder = change.node.value if isinstance(change.node, cst.Attribute) else None
            receiver = holder.value if isinstance(holder, cst.Name) else None
            if order.goes_stale(change, module, False, reader, self._reaches, True, receiver, others):
                return change.node
        return None

    def _reads_own_object(self, node: cst.Attribute, reader: str) -> bool:
        """Whether `node` reads an attribute of method `reader`'s own `self`."""
        function = self.summary.functions.get(reader)
        return isinstance(node.value, cst.Name) and function is not None and function.positional[:1] == (node.value.value,)

    def imported_attribute_change(self, node: cst.Attribute, reader: str | None) -> cst.CSTNode | None:
        """A store this module makes to the attribute `node` reads of an imported module or object
        (`config.DT` in traced function `reader`) that can change it after the trace froze it: in module
        code between calls that may trace `reader`, or in a function that can run then (see
        :mod:`.program_order`)."""
        base = self.records.references.get(id(node.value)) if isinstance(node.value, cst.Name) else None
        changes = self.records.imported_attribute_changes.get((base, node.attr.value), ()) if base is not None else ()
        if not changes or reader is None:
            return None
        runs_later = self._runs_from_elsewhere(reader)
        for change in changes:
            if self.records.program_order.goes_stale(change, self.summary.module, runs_later, reader, self._reaches,
                                                     True, elsewhere=self._runs_from_elsewhere,
                                                     escaping=self.records.escaping_functions):
                return change.node
        return None

    def _runs_only_while_constructing(self, function: str, seen: frozenset[str] = frozenset()) -> bool:
        """A private method (`_configure`) every visible caller of which is a constructor of its class,
        or such a method itself: its stores finish before the object can be traced with."""
        owner, _, name = function.rpartition(".")
        if not name.startswith("_") or name.startswith("__") or function in seen:
            return False
        self.reads.add(Read("callers", function))
        callers = self.solution.callers_of(function)
        return bool(callers) and all(
            caller.rpartition(".")[0] == owner
            and (caller.rpartition(".")[2] in CONSTRUCTORS or self._runs_only_while_constructing(caller, seen | {function}))
            for caller in callers
        )

    def _is_array_attribute(self, node: cst.BaseExpression) -> bool:
        """`self.buf` where every store of the class's methods to `buf` is a JAX array, or `state.vel`
        of a traced object whose class annotates `vel` as an array (and stores nothing else there)."""
        owner = self.records.attribute_owners.get(id(node))
        if owner is None or not isinstance(node, cst.Attribute):
            return False
        stored = self.records.array_attribute_stores.get(owner)
        if stored is not None:
            return stored
        return owner in self.records.array_fields and self.is_traced(node.value)

    def is_array_item_store(self, target: cst.Subscript) -> bool:
        """True when assigning to `target` (`x[i] = v`) would mutate a JAX array in place: `x` is a
        known JAX array, a parameter that certainly holds a tracer (an array is passed where the trace
        is visible), or a traced parameter indexed with a traced value (a list, tuple or dict cannot
        take a tracer as index, so a pytree carry `values[0] = v` is left alone). A string key
        (`params["w"]`) shows a dict, whatever the model thinks of the container."""
        if any(_is_string(element.slice) for element in target.slice):
            return False
        if self.is_ref(target.value):
            return False  # a Pallas Ref: `o_ref[...] = v` is how kernels write
        if self.is_jax_array(target.value):
            return True
        value = self.value_of(target.value)
        param = self._parameter(value)
        if param is None or not self.solution.is_traced(self._asked(value.deps)):
            return False
        if self.solution.certain_tracer(param):
            return True
        return any(isinstance(e.slice, cst.Index) and self.is_traced(e.slice.value) for e in target.slice)

    @staticmethod
    def _parameter(value: Value) -> ParamDep | None:
        """The parameter a value is, when it is one parameter (or a slice of it) and not a container."""
        if value.flags & PYTHON_CONTAINER or len(value.deps) != 1:
            return None
        (dep,) = value.deps
        return dep if isinstance(dep, ParamDep) else None

    def key_reuses(self, node: cst.FunctionDef | cst.Lambda | cst.Module) -> list[KeyReuse]:
        """PRNG keys consumed twice on some path through the body of a function or lambda (or the
        module's own code). Computed on demand, only where the code calls `jax.random`; nested functions,
        lambdas and classes are separate bodies."""
        scope: str | None
        body: Sequence[cst.CSTNode]
        parameters: tuple[str, ...]
        if isinstance(node, cst.Module):
            scope, body, parameters = self.summary.module, node.body, ()
        else:
            params = node.params
            scope = self.function_key(node)
            body = node.body.body if isinstance(node, cst.FunctionDef) else (cst.SimpleStatementLine((cst.Expr(node.body),)),)
            parameters = tuple(
                p.name.value
                for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg,
                          params.star_kwarg)
                if isinstance(p, cst.Param)
            )
        if scope in self.records.random_scopes:
            trace = self.enclosing_trace(scope) if not isinstance(node, cst.Module) else None
            per_item = trace is not None and bool(trace.transforms & jax_api.PER_ITEM_TRANSFORMS)
            applied = self.solution.applied_transforms(scope) if scope is not None else frozenset()
            carry = self._carry_shape(applied)
            per_call = trace is not None and trace.cached and trace.direct and self.runs_repeatedly(scope)
            return find_key_reuses(body, parameters, self.call_name, self._ignores_argument, per_item,
                                   bool(applied & jax_api.PER_ITEM_TRANSFORMS), per_call, carry, self._receives_key,
                                   self._property_paths(scope, parameters), returns_to_caller=trace is not None,
                                   shared_defaults=self._shared_default_keys(node, scope))
        if scope in self._scopes_calling_drawers():  # no `jax.random` call here: only helpers that draw count
            return find_key_reuses(body, parameters, self.call_name, self._draws_nothing,
                                   receives_key=self._receives_key, fresh_attributes=self._property_paths(scope, parameters))
        return []

    def _shared_default_keys(self, node: cst.FunctionDef | cst.Lambda | cst.Module, scope: str | None) -> dict[str, cst.Call]:
        """The parameters of a function whose default is a key made from a fixed seed (`key=PRNGKey(0)`,
        made once, when the `def` runs) that a call run many times leaves to that default, with it."""
        reused = self.solution.defaults_reused.get(scope, set()) if scope is not None else set()
        if isinstance(node, cst.Module) or not reused:
            return {}
        params = (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        return {p.name.value: p.default for p in params
                if p.name.value in reused and isinstance(p.default, cst.Call) and fixed_seed_key(p.default, self.call_name)}

    def _property_paths(self, scope: str | None, parameters: tuple[str, ...]) -> frozenset[str]:
        """`self.rng` for each `@property` of the class of method `scope` (`self` its first parameter)."""
        owner = scope.rpartition(".")[0] if scope is not None and parameters else None
        return frozenset(f"{parameters[0]}.{method.rpartition('.')[2]}" for method in self.records.property_methods
                         if method.rpartition(".")[0] == owner)

    @staticmethod
    def _carry_shape(applied: frozenset[str]) -> CarryShape | None:
        """How a function that is a lax loop body returns its carry (None: not one, or several kinds)."""
        shapes = {jax_api.LOOP_CARRIES[name] for name in applied if name in jax_api.LOOP_CARRIES}
        return shapes.pop() if len(shapes) == 1 and not applied - jax_api.LOOP_CARRIES.keys() else None

    def unmapped_keys(self, node: cst.Call) -> list[str]:
        """For a per-example batching call (`jax.vmap(f, in_axes=(None, 0))`): the parameters of `f` it
        leaves unmapped that `f` passes straight to a consuming `jax.random` call, so every example
        draws the same numbers."""
        entry = self.records.unbatched_targets.get(id(node))
        function = self._named(entry[0]) if entry is not None else None
        if entry is None or function is None or not function.draws:
            return []
        spec = entry[1]
        free = function.positional[spec.bound_positional :]
        positions = spec.normalized(spec.unbatched_positions, len(free))
        return sorted({free[p] for p in positions} & function.draws)

    def _scopes_calling_drawers(self) -> set[str]:
        """The scopes of this module that call a project function drawing from a key parameter."""
        if self._drawing_callers is None:
            self._drawing_callers = set()
            for edge in self.summary.edges:
                callee = self._named(edge.callee, "draws")
                if callee is not None and callee.draws:
                    self._drawing_callers.add(edge.caller)
        return self._drawing_callers

    def _receives_key(self, call: cst.Call, position: int | None, keyword: str | None) -> bool:
        """True when the call hands this argument to something that draws from it: a project function
        passing that parameter to a consuming `jax.random` call, or a JAX-ecosystem callable's key keyword
        (`eqx.nn.Linear(2, 2, key=k)`; not `itertools.groupby(xs, key=f)`)."""
        name = self.call_name(call)
        if name is None:  # a layer object's `key=` may be attention's key (`hk.MultiHeadAttention`): no evidence
            return False
        callee = self._named(name)
        if callee is None:
            return keyword in jax_api.KEY_KEYWORDS and name.startswith(jax_api.KEY_TAKING_LIBRARIES)
        return not self._draws_nothing(call, position, keyword)

    def _draws_nothing(self, call: cst.Call, position: int | None, keyword: str | None) -> bool:
        """True unless the call's callee is a project function that passes the parameter this argument
        binds to straight to a consuming `jax.random` call."""
        name = self.call_name(call)
        callee = self._named(name) if name is not None else None
        if callee is None:
            return True
        parameter = callee.parameter_for(position, keyword, self._bound_arguments(call, callee))
        return parameter is None or parameter not in callee.draws

    @staticmethod
    def _bound_arguments(call: cst.Call, callee: FunctionSummary) -> int:
        """1 when `call` is a method call (`obj.m(...)`) binding the callee's `self`/`cls`, else 0."""
        bound_receiver = isinstance(call.func, cst.Attribute) and callee.positional[:1] in (("self",), ("cls",))
        return 1 if bound_receiver else 0

    def _ignores_argument(self, call: cst.Call, position: int | None, keyword: str | None) -> bool:
        """True when the call's callee is a project function that only probes the parameter this
        argument binds to (`is_prng_key(key)` reads `key.shape`): passing a key there draws nothing. A
        parameter the callee folds data into (`fold_in(rng, step)`) draws nothing only when the call
        passes some of that data, and not as a literal: leaving defaults or passing constants folds the
        same data on every call."""
        name = self.call_name(call)
        callee = self._named(name) if name is not None else None
        if callee is None:
            return False
        bound = self._bound_arguments(call, callee)
        parameter = callee.parameter_for(position, keyword, bound)
        if parameter is None or parameter not in callee.inert_params or parameter in callee.draws:
            return False
        data = dict(callee.key_folds).get(parameter)
        return data is None or any(_varying_argument(call, callee, bound, name) for name in data)

    def functional_update(self, node: cst.Call) -> cst.BaseExpression | None:
        """The array `x` when `node` is `x.at[...].<method>(...)`; None otherwise, and for a Pallas Ref `x`:
        `o_ref.at[0:2]` is a view of the Ref, and `.set(v)` on it writes in place."""
        receiver = at_receiver(node.func)
        if receiver is None:
            return None
        if isinstance(receiver, cst.Name) and self.is_ref(receiver) and not self._loaded(receiver.value):
            return None  # the Ref (a parameter, `x_ref, o_ref = refs`, `out = o_ref`), not a value loaded from it
        return receiver

    def _loaded(self, name: str) -> bool:
        """Whether `name` is assigned an item read somewhere in the module (`x = x_ref[...]`): a value, not a Ref."""
        return any(name in names and isinstance(value, cst.Subscript) for names, value in self.records.name_assignments)


def _varying_argument(call: cst.Call, callee: FunctionSummary, bound: int, parameter: str) -> bool:
    """Whether `call` passes parameter `parameter` of `callee` an argument that is not a literal (a
    default left in place, or a constant, is the same on every call)."""
    position = 0
    for arg in call.args:
        if arg.star:
            return True  # `*args`/`**kwargs` may pass it: the analysis cannot tell
        index = position if arg.keyword is None else None
        position += arg.keyword is None
        if callee.parameter_for(index, arg.keyword.value if arg.keyword else None, bound) == parameter:
            return not isinstance(arg.value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString))
    return False


@dataclass(frozen=True, slots=True)
class TraceNote:
    """A note of a trace chain, not located yet: `message` at the node of module `module` (file `path`)
    where `root` (a root's target and spec) is applied, or where the call `edge` is made."""

    message: str
    path: str
    module: str
    root: tuple[str, TraceSpec] | None = None
    edge: CallEdge | None = None


def site_in(records: ModuleRecords, note: TraceNote) -> cst.CSTNode | None:
    """The node of the module `records` describes that `note` cites, if found."""
    if note.root is not None:
        return records.root_sites.get(note.root)
    return records.site_of_edge(note.edge) if note.edge is not None else None


def _chain_note(link: ChainLink) -> TraceNote:
    witness = link.witness
    name = f"`{_short_name(link.function)}`"
    if witness.root is not None:
        root, transform = witness.root, witness.root.spec.transform
        if witness.through is not None:
            message = f"{name} is passed to `{_short_name(witness.through)}`, which applies `{transform}` to it"
        elif root.decorator:
            message = f"{name} is traced by `@{transform}`"
        else:
            message = f"{name} is traced by `{transform}(...)`"
    else:
        assert witness.edge is not None
        caller = f"`{_short_name(witness.edge.caller)}`"
        if witness.through is not None:
            message = f"`{_short_name(witness.through)}` passes {name} to {caller}, which calls it"
        else:
            message = f"{caller} calls {name}"
        if link.traced:
            names = ", ".join(f"`{p}`" for p in sorted(link.traced))
            message += f": {names} {'is' if len(link.traced) == 1 else 'are'} traced"
    if witness.site is not None:
        return TraceNote(message, witness.path, witness.module, edge=witness.site)
    if witness.root is not None:
        return TraceNote(message, witness.path, witness.module, root=(witness.root.target, witness.root.spec))
    return TraceNote(message, witness.path, witness.module, edge=witness.edge)


def _short_name(key: str) -> str:
    """A function key as a note names it: `pkg.mod.Cls.method` -> `Cls.method` when the part before the
    name starts with a capital letter (a class), else the bare name (`pkg.mod.f.<locals>.g` -> `g`)."""
    head, _, name = key.rpartition(".")
    owner = head.rpartition(".")[2]
    return f"{owner}.{name}" if owner[:1].isupper() else name


def _is_string(index: cst.BaseSlice) -> bool:
    return isinstance(index, cst.Index) and isinstance(
        index.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
    )


def _stores_on_class(store: cst.CSTNode, class_key: str) -> bool:
    """Whether a store to an attribute goes to the class itself (`Counter.total = 0`, `cls.total += 1`),
    shared by every object, rather than to one object."""
    holder = store.value if isinstance(store, cst.Attribute) else None
    return isinstance(holder, cst.Name) and holder.value in (class_key.rpartition(".")[2], "cls")
