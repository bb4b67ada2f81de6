"""The one traversal that builds a module's semantic model.

:class:`ModelBuilder` walks the module once, abstract-interpreting every statement and expression:
it resolves imports and scopes, records the abstract :class:`Value` of each expression that could be
traced, finds trace roots (decorators, `jax.jit(f)`, lax bodies, Flax methods) and call edges, and
emits the module's :class:`ModuleSummary`. Function bodies are interpreted after the enclosing scope
is complete (pyflakes-style deferral), so helpers defined below their callers resolve.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import NamedTuple

import libcst as cst

from jaxcheck.analyzer.project import absolute_module
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.bindings import MUTATING_METHODS, CallableOrigin, ChangeKind, ChangeSite
from jaxcheck.analyzer.semantics.program_order import CallEvent
from jaxcheck.analyzer.semantics.prng import is_key_like_name
from jaxcheck.analyzer.semantics import shapes
from jaxcheck.analyzer.semantics.parameter_use import (
    FORMATTING_CALLS, KEY_REWRAP, KEY_VIEWS, PROBE_ATTRIBUTES, PROBE_CALLS, TREE_MAPS, ParameterUse,
)
from jaxcheck.analyzer.semantics.records import ModuleRecords, OuterName, TransformSite, cut_region
from jaxcheck.analyzer.semantics.scopes import (
    VARIABLE,
    Binding,
    BindingKind,
    Scope,
    ScopeKind,
    qualified_name,
)
from jaxcheck.analyzer.semantics.summary import (
    ArrayLeaf,
    CallEdge,
    FunctionSummary,
    ModuleSummary,
    TraceRoot,
    TraceSpec,
)
from jaxcheck.analyzer.semantics.syntax import (
    argument, at_receiver, chain_root, dotted, is_false_literal, last_statement, literal_ints, literal_strings, runs_once,
    target_names,
)
from jaxcheck.analyzer.semantics.objects import ObjectReader
from jaxcheck.analyzer.semantics.references import ReferenceReader
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.budget import FIXPOINT_DEPTH, Budget, BudgetSpent
from jaxcheck.analyzer.semantics.guards import (Guard, Guarding, GuardReader, KeyTest, Narrowed, Narrowing, Slot, empty_slots,
                                                 lookup_of)
from jaxcheck.analyzer.semantics.trace_roots import TraceRootReader
from jaxcheck.analyzer.semantics.values import (
    ARRAY_VALUED,
    GRADIENT_STOPPED,
    CallArguments,
    NO_DEPS,
    BOOL_MASK,
    FILESYSTEM_PATH,
    LOGGER,
    NUMPY_ARRAY,
    NUMPY_GENERATOR,
    SEEDED_GENERATOR,
    KEY_TAKING_LAYER,
    JAX_ARRAY,
    PYTHON_CONTAINER,
    PYTHON_SET,
    UNKNOWN,
    CallDep,
    Deps,
    OpaqueDep,
    ParamDep,
    Returned,
    StagedDep,
    Value,
    combine,
)
from jaxcheck.analyzer.tree import child_nodes, descendants

Env = dict[str, Value]
FunctionNode = cst.FunctionDef | cst.Lambda

_ELEMENTWISE_BUILTINS = frozenset(
    f"builtins.{n}" for n in ("abs", "min", "max", "sum", "round", "pow", "divmod", "sorted", "reversed", "iter", "next")
)
_CONTAINER_BUILTINS = frozenset(
    f"builtins.{n}" for n in ("list", "tuple", "sorted", "dict", "set", "frozenset")
)
_SET_BUILTINS = frozenset({"builtins.set", "builtins.frozenset"})
_SET_OPERATORS = (cst.Subtract, cst.BitAnd, cst.BitOr, cst.BitXor)
_ORDERING_OPERATORS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
_MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)
_OBJECT_FACTORIES = {
    "logging.getLogger": LOGGER,
    "numpy.random.default_rng": NUMPY_GENERATOR,
    "numpy.random.RandomState": NUMPY_GENERATOR,
    "numpy.random.Generator": NUMPY_GENERATOR,
    "pathlib.Path": FILESYSTEM_PATH,
    "pathlib.PurePath": FILESYSTEM_PATH,
    "pathlib.PosixPath": FILESYSTEM_PATH,
    "pathlib.WindowsPath": FILESYSTEM_PATH,
}
"""Calls whose result is an object with impure methods, tracked through assignments."""
_SEEDED_BY_ARGUMENT = frozenset({"numpy.random.default_rng", "numpy.random.RandomState"})
"""Generator factories whose first argument (or `seed=`) is the seed; without one they seed from entropy."""
_PATH_METHODS = frozenset({"joinpath", "with_name", "with_suffix", "with_stem", "resolve", "absolute", "expanduser"})
_PLAIN_DECORATORS = frozenset({
    "builtins.staticmethod", "builtins.classmethod", "builtins.property", "functools.cache", "functools.lru_cache",
    "functools.cached_property", "typing.overload", "abc.abstractmethod",
})
"""Decorators that keep no function to call later: the function still runs only where it is called."""
_BRANCH = " branch"
"""A function environment's entry for the code being read: what a new array operation there depends on,
`StagedDep(function)` guarded like every value of the environment when a test narrows the branch (two of
them after branches join). Kept in the environment, so it is saved, guarded and joined with it; never
the name of a variable (it is no identifier)."""
_EXTERNAL_PREFIXES = ("builtins.", "jax.", "numpy.", "math.", "functools.", "typing.")


@dataclass(slots=True)
class _PendingBody:
    node: FunctionNode
    key: str
    scope: Scope


class ModelBuilder(TraceRootReader, ObjectReader, GuardReader, ReferenceReader):
    """Interprets one module. Use :meth:`build`; the instance is single-use."""

    def __init__(self, module_name: str, path: str, extra_jit: Iterable[str] = (), package: str | None = None) -> None:
        self.module_name = module_name
        self.path = path
        self.package = package if package is not None else module_name.rpartition(".")[0]
        self.transforms = dict(jax_api.TRANSFORMS)
        for name in extra_jit:  # a project's own jit wrapper behaves like jax.jit
            self.transforms[name] = replace(jax_api.TRANSFORMS["jax.jit"], name=name)
        self.records = ModuleRecords()
        self.functions: dict[str, FunctionSummary] = {}
        self.roots: dict[tuple[str, TraceSpec], TraceRoot] = {}
        self.edges: dict[int, CallEdge] = {}
        self.root_sites: dict[tuple[str, TraceSpec], tuple[cst.CSTNode, bool]] = {}
        self._root_site: tuple[cst.CSTNode, bool] | None = None
        self.repeated_calls: set[str] = set()
        self.enables_x64 = False
        self._transform_results: set[tuple[str, str]] = set()
        """(code scope, name) pairs bound to a transform's result (`step = jax.jit(f)`), whatever `f` is."""
        self._transformed_attributes: dict[tuple[str, str], str] = {}
        """(class key, attribute) -> the method a transform stored there wraps (`self._act =
        jax.jit(self._act_impl)` in a method): `self._act(q)` in the class's methods runs that method."""
        self.wide_dtypes = False
        self.parameter_use = ParameterUse()
        self._parameter_folds: set[int] = set()
        """`jax.random.fold_in` calls that make a key of the call's own from a parameter key (see
        :meth:`_note_fold`)."""
        self._eager_blocks: dict[str, int] = {}
        """How many `with jax.ensure_compile_time_eval():` blocks each function is inside here: there, array
        operations on concrete values are computed at once, not staged (the function's own body only:
        a function defined in the block runs later, outside it)."""
        self._folded_values: dict[int, Value] = {}
        """The values such folds bound back to the parameter's own name, by id (kept alive here)."""
        self._called_names: set[int] = set()
        """Names (by id) read to be called or transformed right there (`f(x)`, `jax.jit(f)`), not as values."""
        self._rewrapped: set[int] = set()
        """Calls (by id) whose result `jax.random.wrap_key_data` makes a key again (`key_data(key)` there)."""
        self._constant_folds: dict[int, str] = {}
        """`jax.random.fold_in` calls that fold a literal into a parameter key (by id), with that parameter:
        every call derives the same key (see :meth:`_note_constant_fold`)."""
        self._derived_keys: dict[int, tuple[Value, str]] = {}
        """The values such folds bound to a name, by id, with the parameter they derive from (kept alive)."""
        self._container_params: dict[str, frozenset[str]] = {}
        self._param_classes: dict[str, dict[str, str]] = {}
        self._transformed_params: dict[str, list[tuple[str, TraceSpec]]] = {}
        self._class_bases: dict[str, tuple[str, ...]] = {}
        self._attribute_instances: dict[tuple[str, str], str | None] = {}
        self._attribute_kinds: dict[tuple[str, str], int] = {}
        """Per (class, attribute), the value flags every store seen so far agrees on (see `ObjectReader`)."""
        self._parameter_names: dict[str, frozenset[str]] = {}
        self._immediate_calls: dict[int, cst.Call] = {}
        """Transform calls called right away (`jax.vmap(f)(x)`), by id, with the call."""
        self._rejects_tracers: dict[str, frozenset[str]] = {}
        """Per function key, the parameters it raises on at once when they hold a tracer."""
        self._draws: dict[str, set[str]] = {}
        """Per function key, the parameters it passes as the key to a consuming `jax.random` call."""
        self._conditional = 0
        """How many enclosing expressions may skip what is being evaluated (`a if c else b`, `x and y`)."""
        self._empty_slots: list[tuple[Slot, int]] = []
        """The cache slots the guards around the current point prove empty, each with how many loops were
        open where its guard was tested (a slot filled in a loop inside the guard is filled repeatedly)."""
        self._loop_targets: dict[int, frozenset[str]] = {}
        """Per loop (by node id), the names its header binds anew each iteration (`for name, fn in ...`)."""
        self._lookups: dict[str, KeyTest] = {}
        """Names of the function being read that hold `table.get(k)` (for `if f is None:`)."""
        """`key not in table` facts that hold here: a store `table[key] = v` adds an entry, and changes
        no entry a trace may have read (a write-once memo or registry)."""
        self._concrete_after_statement: set[Narrowed] = set()
        self._immediate_args: dict[int, list[Value]] = {}
        """The argument values of those calls (`x`), by the id of the call."""
        self.returns: dict[str, Value] = {}
        self.tuple_returns: dict[str, tuple[Value, ...] | None] = {}
        self._return_leaves: dict[str, frozenset[ArrayLeaf]] = {}
        self._called_params: dict[str, list[tuple[str, CallArguments]]] = {}
        self.flax_classes: set[str] = set()
        self.nnx_classes: set[str] = set()
        """Classes of this module deriving from a Flax NNX object (see `jax_api.NNX_OBJECT_BASES`)."""
        self.attribute_methods: set[str] = set()
        """Methods read as attributes (`@property`, `functools.cached_property`): `self.m` is their value."""
        self.static_methods: set[str] = set()
        self.scope = Scope(ScopeKind.MODULE, module_name, None)
        self._pending: deque[_PendingBody] = deque()
        self._lambda_counts: dict[str, int] = {}
        self._budget = Budget()
        self._narrowings: dict[int, Narrowing] = {}
        self._guardings: dict[tuple[str, Guard], Guarding] = {}
        self._function_bodies: dict[str, cst.FunctionDef] = {}
        self._rebound: dict[str, frozenset[str]] = {}
        self._unguarded_statements: set[int] = set()
        """Statements some pass of a loop read outside any guard (see `_note_branch`)."""
        self._branches: list[tuple[int, int]] = []
        self._loops: list[int] = []
        self._order = 0
        self._outer_names: dict[tuple[str, BindingKind], OuterName] = {}

    # ----------------------------------------------------------------------------------- driving
    def build(self, module: cst.Module) -> tuple[ModuleRecords, ModuleSummary]:
        """Interpret `module`; return the node records and the module summary. Within the work budget
        (:mod:`.budget`): a function body (or the module-level code) that spends its budget is cut."""
        try:
            self._block(module.body)
        except BudgetSpent:
            self._cut(self.module_name, module)
        while self._pending:
            self._function_body(self._pending.popleft())
        functions = {
            key: replace(
                f, returns=self.returns.get(key, UNKNOWN).deps, return_elements=self._return_elements(key),
                inert_params=(inert := self.parameter_use.inert(key, f.parameters)),
                key_folds=self.parameter_use.folds(key, inert),
                draws=frozenset(self._draws.get(key, ())),
                transformed_params=tuple(self._transformed_params.get(key, ())),
                array_leaves=self._return_leaves.get(key, frozenset()),
                called_params=tuple(self._called_params.get(key, ())),
            )
            for key, f in self.functions.items()
        }
        exports = {name: b.target for name, b in self.scope.bindings.items() if b.kind is not BindingKind.VARIABLE}
        roots = tuple(self._roots())
        summary = ModuleSummary(
            self.module_name, self.path, functions, roots, tuple(self.edges.values()), exports,
            frozenset(self.repeated_calls), self.enables_x64, self.wide_dtypes,
            tuple(self.records.function_keys.get(id(cut), self.module_name) for cut in self.records.cut_nodes),
        )
        return self.records, summary

    def _cut(self, key: str, node: cst.CSTNode) -> None:
        """Function `key` (or the module-level code) spent its budget: forget what it returns and the
        values of its expressions, and record the cut (nothing is reported inside `node`)."""
        self.records.cut_nodes.append(node)
        for child in cut_region(node):
            self.records.values.pop(id(child), None)
        self.returns.pop(key, None)
        self.tuple_returns.pop(key, None)
        self._return_leaves.pop(key, None)

    def _add_edge(self, node: cst.CSTNode, edge: CallEdge) -> None:
        unless, absent, truthy = self._branch_guard()
        if unless or absent or truthy:
            edge = replace(edge, unless=unless, absent=absent, truthy=truthy)
        self.edges[id(node)] = edge
        self.records.edge_sites.append((edge, node))

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

    def _record_return(self, value: Value) -> None:
        """Join `value` into the current function's return value (per element for tuple returns)."""
        key = self._function_key
        previous = self.returns.get(key)
        self.returns[key] = value if previous is None else previous.joined(value)
        leaves = frozenset(structure.array_leaves(value))
        self._return_leaves[key] = leaves if previous is None else self._return_leaves.get(key, frozenset()) & leaves
        elements = self.tuple_returns.get(key, ()) if previous is not None else None
        if value.elements is None or (elements is not None and len(elements) != len(value.elements)):
            self.tuple_returns[key] = None
        elif elements is None:
            self.tuple_returns[key] = value.elements
        else:
            self.tuple_returns[key] = tuple(a.joined(b) for a, b in zip(elements, value.elements))

    def _block(self, statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            self._budget.spend()
            handler = _STATEMENT_HANDLERS.get(type(statement))
            if handler is not None:
                self._note_branch(statement)
                handler(self, statement)
                self._end_statement()

    def _suite(self, suite: cst.BaseSuite) -> None:
        known_empty = len(self._empty_slots)
        if isinstance(suite, cst.IndentedBlock):
            self._block(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            self._note_branch(suite)
            self._small_statements(suite.body)
        del self._empty_slots[known_empty:]

    def _note_branch(self, node: cst.CSTNode) -> None:
        """Record the guards of the branch `node` (a statement, a read) runs in, when it is guarded on
        every pass the builder reads it (a loop body is read twice: the guards of both passes count)."""
        entry = self.scope.function_scope().env.get(_BRANCH)
        key = id(node)
        if entry is not None and all(isinstance(dep, StagedDep) and dep.guarded for dep in entry.deps):
            if key not in self._unguarded_statements:
                self.records.branch_guards[key] = self.records.branch_guards.get(key, frozenset()) | entry.deps
        elif self._loops:  # read again on the loop's next pass: stays unguarded
            self.records.branch_guards.pop(key, None)
            self._unguarded_statements.add(key)


    @property
    def _function_key(self) -> str:
        return self.scope.function_scope().key

    @property
    def _in_function(self) -> bool:
        return self.scope.function_scope().kind is ScopeKind.FUNCTION

    @property
    def _records_transform_sites(self) -> bool:
        """Transform sites matter inside functions, and in module-level loops (module code runs once)."""
        return self._in_function or bool(self._loops)

    @property
    def _site_function(self) -> str | None:
        """The function a transform site is in (None at module level)."""
        return self._function_key if self._in_function else None

    # -------------------------------------------------------------------------------- statements
    def _note_name_assignment(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        names = tuple(target.value for target in targets if isinstance(target, cst.Name))
        if names:
            self.records.name_assignments.append((names, value))

    def _simple_statement_line(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.SimpleStatementLine)
        self._small_statements(node.body)

    def _small_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> None:
        for statement in statements:
            self._end_statement()
            if isinstance(statement, cst.Expr):
                self._eval(statement.value)
            elif isinstance(statement, cst.Assign):
                self._note_name_assignment([target.target for target in statement.targets], statement.value)
                value = self._eval(statement.value)
                self._note_folded_binding(statement.value, value)
                for target in statement.targets:
                    self._bind(target.target, value)
                    self._record_origin(target.target, statement.value)
                    self._record_transform_binding(target.target, statement.value)
                    self._name_lambda(target.target, statement.value)
                self._note_lookup([target.target for target in statement.targets], statement.value)
                self._note_kept_transform([target.target for target in statement.targets], statement.value)
            elif isinstance(statement, cst.AnnAssign):
                self._note_references(statement.annotation.annotation)
                self._note_final(statement)
                self._note_field(statement)
                if statement.value is not None:
                    self._note_name_assignment((statement.target,), statement.value)
                    self._bind(statement.target, self._eval(statement.value))
                    self._record_origin(statement.target, statement.value)
                elif not isinstance(statement.target, cst.Name):
                    self._eval_target_parts(statement.target)
            elif isinstance(statement, cst.AugAssign):
                self._aug_assign(statement)
            elif isinstance(statement, cst.Return):
                if statement.value is not None:
                    self._record_return(self._eval(statement.value))
            elif isinstance(statement, (cst.Import, cst.ImportFrom)):
                self._import(statement)
            elif isinstance(statement, cst.Global):
                self.scope.declared_global.update(item.name.value for item in statement.names)
            elif isinstance(statement, cst.Nonlocal):
                self.scope.declared_nonlocal.update(item.name.value for item in statement.names)
            elif isinstance(statement, cst.Assert):
                self._eval(statement.test)
                if statement.msg is not None:
                    self._eval(statement.msg)
            elif isinstance(statement, cst.Raise):
                if statement.exc is not None:
                    self._eval(statement.exc)
            elif isinstance(statement, cst.Del):
                self._eval_target_parts(statement.target)

    def _aug_assign(self, node: cst.AugAssign) -> None:
        value = self._eval(node.value)
        if isinstance(node.target, cst.Name):
            current = self.scope.load(node.target.value)
            flags = current.flags & value.flags & PYTHON_CONTAINER | current.flags & JAX_ARRAY
            owner = self._owner(node.target.value)
            if owner is not None:
                self.records.history.changed(owner.key, node.target.value, self._change(node, ChangeKind.AUGMENTED))
            self._bind(node.target, combine((current, value), flags))
        else:
            self._note_attribute_change(node.target)
            self._note_module_attribute_change(node.target)
            self._note_imported_attribute_change(node.target, ChangeKind.AUGMENTED)
            target = node.target
            key = structure.constant_key(target.slice) if isinstance(target, cst.Subscript) else None
            old = None
            if isinstance(key, str) and isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                old = self.scope.load(target.value.value).field(key)  # `d["n"] += 1`: field `n` grows by the value
            self._eval_target_parts(node.target, combine((old, value)) if old is not None else None)

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
                continue
            spec = self._spec(*configured)
            if self._records_transform_sites:
                site = TransformSite(self._site_function, tuple(self._loops), origin, spec.caches)
                self.records.transform_sites[id(decorator)] = site
            unmapped = self._unmapped_spec(configured[0], spec)
            if unmapped is not None and isinstance(decorator.decorator, cst.Call):
                self.records.unbatched_targets[id(decorator.decorator)] = (key, unmapped)
        if self.scope.kind is ScopeKind.CLASS and self.scope.key in self.flax_classes:
            compact = any(qualified_name(self.scope, d.decorator) == jax_api.FLAX_COMPACT for d in node.decorators)
            if compact or node.name.value in jax_api.FLAX_TRACED_METHODS:
                spec = TraceSpec("flax.linen.Module", True, array_params_only=True, bound_positional=1)
                self._root_site = (node.name, False)
                self._add_root(key, spec)
        rejected = self._tracer_rejecting_params(node)
        if rejected:
            self._rejects_tracers[key] = rejected
        self._pending.append(_PendingBody(node, key, self.scope))

    def _class_def(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.ClassDef)
        for decorator in node.decorators:
            self._eval(decorator.decorator)
        is_flax = is_nnx = False
        for base in node.bases:
            self._eval(base.value)
            name = qualified_name(self.scope, base.value)
            is_flax |= name in jax_api.FLAX_MODULE_BASES or name in self.flax_classes
            is_nnx |= name in jax_api.NNX_OBJECT_BASES or name in self.nnx_classes
        for keyword in node.keywords:
            self._eval(keyword.value)
        key = self._child_key(node.name.value)
        self._note_class(key, node)
        self.scope.bind(node.name.value, Binding(BindingKind.CLASS, key))
        if is_flax:
            self.flax_classes.add(key)
        if is_nnx:
            self.nnx_classes.add(key)
        outer = self.scope
        self.scope = Scope(ScopeKind.CLASS, key, outer)
        try:
            self._suite(node.body)
        finally:
            self.scope = outer
        self._note_own_flattening(key, node)

    def _if(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.If)
        self._eval(node.test)
        self._end_statement()
        concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.test)
        eager_if_true, eager_if_false = self._eager_alternatives(node)
        concrete_if_true, concrete_if_false = concrete_if_true | eager_if_true, concrete_if_false | eager_if_false
        empty_if_true, empty_if_false = empty_slots(node.test, self._lookups)
        before = dict(self._env)
        self._assume_narrowed(concrete_if_true)
        with self._branch(node, 0), self._slots_empty(empty_if_true):
            self._suite(node.body)
        after_body = self._swap_env(before)
        self._assume_narrowed(concrete_if_false)
        with self._branch(node, 1), self._slots_empty(empty_if_false):
            if isinstance(node.orelse, cst.If):
                self._if(node.orelse)
            elif node.orelse is not None:
                self._suite(node.orelse.body)
        if not _always_exits(node.body):  # `if isinstance(x, Tracer): raise ...`: x is concrete after it
            self._join_env(after_body)
        elif node.orelse is None:  # `if k in table: raise ...`: k is absent after it
            self._empty_slots += [(slot, len(self._loops)) for slot in empty_if_false]

    @contextmanager
    def _branch(self, node: cst.CSTNode, alternative: int) -> Iterator[None]:
        """Inside one alternative of a branching statement (for telling rebinding from alternatives)."""
        self._branches.append((id(node), alternative))
        try:
            yield
        finally:
            self._branches.pop()

    @contextmanager
    def _slots_empty(self, slots: list[Slot]) -> Iterator[None]:
        """Inside a branch whose guard proves `slots` empty (`k not in table`, `self._f is None`)."""
        known = len(self._empty_slots)
        self._empty_slots += [(slot, len(self._loops)) for slot in slots]
        try:
            yield
        finally:
            del self._empty_slots[known:]

    @contextmanager
    def _in_loop(self, node: cst.CSTNode) -> Iterator[None]:
        if isinstance(node, cst.For):
            self._loop_targets[id(node)] = frozenset(target_names(node.target))
        self._loops.append(id(node))
        try:
            yield
        finally:
            self._loops.pop()

    def _for(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.For)
        element = self._iteration_value(node.iter, self._eval(node.iter))
        if runs_once(node):  # `for x in [x0]:` is straight-line code
            self._bind(node.target, element)
            self._suite(node.body)
        else:
            with self._in_loop(node):
                def iteration() -> None:
                    self._bind(node.target, element)
                    self._suite(node.body)

                self._loop(iteration)
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _while(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.While)
        with self._in_loop(node):
            def iteration() -> None:
                self._eval(node.test)
                self._suite(node.body)

            self._loop(iteration)
        if node.orelse is not None:
            self._suite(node.orelse.body)

    def _loop(self, body: Callable[[], object]) -> None:
        """Interpret a loop body until its environment is stable (at most twice): loop-carried values
        seen on the second pass, so `acc = acc + x` is traced at its use in the next iteration. A loop
        nested deeper than `FIXPOINT_DEPTH` runs once."""
        before = dict(self._env)
        body()
        self._join_env(before)
        if self._env != before and len(self._loops) <= FIXPOINT_DEPTH:
            entry = dict(self._env)
            body()
            self._join_env(entry)

    def _try(self, node: cst.CSTNode) -> None:
        assert isinstance(node, (cst.Try, cst.TryStar))
        before = dict(self._env)
        with self._branch(node, 0):
            self._suite(node.body)
        self._join_env(before)
        after_body = dict(self._env)
        handlers: Sequence[cst.ExceptHandler | cst.ExceptStarHandler] = node.handlers
        if any(self._handles_concretization(handler) for handler in handlers):
            self.records.concretization_caught.add(id(node))
        for index, handler in enumerate(handlers, start=1):
            self._swap_env(dict(after_body))
            if handler.type is not None:
                self._eval(handler.type)
            with self._branch(node, index):
                if handler.name is not None:
                    self._bind(handler.name.name, UNKNOWN)
                self._suite(handler.body)
            after_body = self._merged(after_body, self._env)
        self._swap_env(after_body)
        if node.orelse is not None:
            with self._branch(node, 0):
                self._suite(node.orelse.body)
        if node.finalbody is not None:
            self._suite(node.finalbody.body)

    def _handles_concretization(self, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
        """`except TypeError:` (or `jax.errors.ConcretizationTypeError`, or a tuple with one of them) whose
        body does not end by raising: code in the `try` body that needs a concrete value has a fallback
        when it meets a tracer. A bare `except:` or `except Exception:` expects other errors."""
        if handler.type is None or isinstance(last_statement(handler.body), cst.Raise):
            return False
        caught = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
        return any(qualified_name(self.scope, kind) in jax_api.CONCRETIZATION_ERRORS for kind in caught)

    def _with(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.With)
        eager = False
        for item in node.items:
            self._eval(item.item)
            if item.asname is not None:
                self._bind(item.asname.name, UNKNOWN)
            eager |= isinstance(item.item, cst.Call) and self.records.call_names.get(id(item.item)) in jax_api.COMPILE_TIME_EVAL
        key = self._function_key
        if not eager:
            self._suite(node.body)
            return
        before = dict(self._env)
        self._eager_blocks[key] = self._eager_blocks.get(key, 0) + 1
        try:
            self._suite(node.body)
        finally:
            self._eager_blocks[key] -= 1
        if not self._eager_blocks[key]:
            self._restage(before)

    def _restage(self, before: Env) -> None:
        """After a `jax.ensure_compile_time_eval()` block: the JAX arrays it computed are concrete, but
        operations on them outside are staged again (`int(table[1])` after the block fails under jit), so
        they depend on the staging here once more."""
        staged = self._staged_here().deps
        for name, value in list(self._env.items()):
            if before.get(name) is not value and value.flags & JAX_ARRAY and not staged <= value.deps:
                self._env[name] = replace(value, deps=value.deps | staged)

    def _match(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.Match)
        self._eval(node.subject)
        before = dict(self._env)
        merged = dict(before)
        for index, case in enumerate(node.cases):
            self._swap_env(dict(before))
            for captured in _captured_names(case.pattern):  # `case x:` rebinds `x`: its shape is unknown
                current = self._env.get(captured)
                if current is not None:
                    self._env[captured] = current.without_shape()
            if case.guard is not None:
                self._eval(case.guard)
            with self._branch(node, index):
                self._suite(case.body)
            merged = self._merged(merged, self._env)
        self._swap_env(merged)

    # ----------------------------------------------------------------------- environment helpers
    @property
    def _env(self) -> Env:
        return self.scope.function_scope().env

    def _swap_env(self, env: Env) -> Env:
        scope = self.scope.function_scope()
        previous, scope.env = scope.env, env
        return previous

    def _join_env(self, other: Env) -> None:
        self._swap_env(self._merged(self._env, other))

    def _merged(self, first: Env, second: Env) -> Env:
        """The environment after two paths join: values joined name by name. A name that has no value
        on one path (unbound or unknown there) keeps the other path's facts but no certain shape."""
        self._budget.spend(len(first) + len(second))
        merged = dict(first)
        for name, value in second.items():
            current = merged.get(name)
            merged[name] = value.without_shape() if current is None else current.joined(value)
        for name in first.keys() - second.keys():
            merged[name] = merged[name].without_shape()
        return {name: value for name, value in merged.items() if value}

    # ---------------------------------------------------------------------------------- binding
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

    def _next_order(self) -> int:
        """A counter of binding events and definitions, increasing in traversal order."""
        self._order += 1
        return self._order

    def _outer_name(self, owner: Scope, kind: BindingKind) -> OuterName:
        """One shared OuterName per (scope, kind): reads of outer names are frequent."""
        key = (owner.key, kind)
        outer = self._outer_names.get(key)
        if outer is None:
            outer = self._outer_names[key] = OuterName(owner.key, owner.kind is ScopeKind.MODULE, kind)
        return outer

    def _owner(self, name: str) -> Scope | None:
        """The module or function scope whose variable `name` is, as seen from here."""
        resolved = self.scope.resolve(name)
        if resolved is None or resolved[0].kind not in (ScopeKind.MODULE, ScopeKind.FUNCTION):
            return None
        return resolved[0]

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

    @property
    def _code_scope(self) -> str:
        """The module or function whose own statements are being interpreted (class bodies and
        comprehensions run as part of the code around them)."""
        scope = self.scope
        while scope.kind in (ScopeKind.CLASS, ScopeKind.COMPREHENSION) and scope.parent is not None:
            scope = scope.parent
        return scope.key

    def _call_event(self, node: cst.Call, callee: str) -> None:
        """The current code calls `callee` (for program order: what may be traced when)."""
        self.records.program_order.called(self._code_scope, id(node), CallEvent(self._next_order(), tuple(self._loops), callee, node))

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
            return not self._in_function or target.value in scope.declared_global | scope.declared_nonlocal
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

    def _known(self, node: cst.BaseExpression) -> Value:
        """The value already recorded for an evaluated expression."""
        return self.records.values.get(id(node), UNKNOWN)

    # ------------------------------------------------------------------------------- functions
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
        scope.env[_BRANCH] = Value(frozenset({StagedDep(key)}))
        for name in names:
            scope.bind(name, VARIABLE, Value(frozenset({ParamDep(key, name)}), instance=classes.get(name)))
        containers = {n for n in (function.var_positional, function.var_keyword) if n is not None}
        for name in containers | self._container_params.get(key, frozenset()):
            scope.bind(name, VARIABLE, Value(frozenset({ParamDep(key, name)}), PYTHON_CONTAINER))
        if defining.kind is ScopeKind.CLASS and function.positional and key not in self.static_methods:
            scope.self_name = function.positional[0]
            scope.class_scope = defining
        return scope

    def _function_body(self, pending: _PendingBody) -> None:
        node = pending.node
        assert isinstance(node, cst.FunctionDef)
        self._function_bodies[pending.key] = node
        outer, branches, loops, empty, lookups = self.scope, self._branches, self._loops, self._empty_slots, self._lookups
        self.scope = self._function_scope(node, pending.key, pending.scope)
        self._branches, self._loops, self._empty_slots, self._lookups = [], [], [], {}
        enclosing = self._budget.enter_function()
        try:
            self._suite(node.body)
        except BudgetSpent:
            self._cut(pending.key, node)
        finally:
            self._budget.leave_function(enclosing)
            self.scope, self._branches, self._loops, self._empty_slots, self._lookups = outer, branches, loops, empty, lookups

    def _eval_parameter_defaults(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                self._eval(param.default)

    # ------------------------------------------------------------------------------ expressions
    def _eval(self, node: cst.BaseExpression) -> Value:
        """Interpret `node` and its sub-expressions; record and return its abstract value."""
        self._budget.spend()
        handler = _EXPRESSION_HANDLERS.get(type(node))
        value = handler(self, node) if handler is not None else UNKNOWN
        if value:
            self.records.values[id(node)] = value
        elif id(node) in self.records.values:  # a loop's second pass: a shape from the first may not hold
            self.records.values[id(node)] = self.records.values[id(node)].without_shape()
        return value

    def _name(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Name)
        if id(node) not in self._called_names:
            binding = self.scope.lookup(node.value)
            if binding is not None and binding.kind is BindingKind.FUNCTION:
                self.records.escaping_functions.add(binding.target)  # read as a value: it may run any time
        function = self.scope.function_scope()
        if function.kind is not ScopeKind.FUNCTION:
            binding = self.scope.lookup(node.value)
            if binding is not None and binding.kind is BindingKind.IMPORT:
                self._reference(node, binding.target)
        else:
            resolved = self.scope.resolve(node.value)
            if resolved is not None:
                owner, binding = resolved
                if binding.kind is BindingKind.IMPORT:
                    self._reference(node, binding.target)
                if self._reads_parameter(owner, node.value):
                    self.parameter_use.read(owner.key, node.value)
                if owner.function_scope() is not function and owner.kind is not ScopeKind.CLASS:
                    if binding.kind in (BindingKind.VARIABLE, BindingKind.IMPORT):
                        self.records.outer_names[id(node)] = self._outer_name(owner, binding.kind)
                    if binding.kind is BindingKind.VARIABLE:
                        self.records.outer_variable_reads.append((node, function.key))
                        self._note_branch(node)
                elif node.value == function.self_name and function.class_scope is not None:
                    if function.class_scope.key not in self.flax_classes:
                        self.records.self_loads.add(id(node))
                    if function.class_scope.key in self.nnx_classes:
                        self.records.nnx_self_loads.add(id(node))
        value = self.scope.load(node.value)
        if value.shape is not None:
            shape_owner = self._owner(node.value)
            if shape_owner is not None:
                self.records.shaped_names[id(node)] = (shape_owner.key, node.value)
        return value

    def _is_own_parameter(self, name: str) -> bool:
        """Whether `name` here is a parameter of the function being interpreted (not of an enclosing one)."""
        resolved = self.scope.resolve(name)
        if resolved is None:
            return False
        owner = resolved[0]
        return owner is self.scope.function_scope() and self._is_parameter(owner, name)

    def _is_parameter(self, owner: Scope, name: str) -> bool:
        if owner.kind is not ScopeKind.FUNCTION:
            return False
        names = self._parameter_names.get(owner.key)
        if names is None:
            function = self.functions.get(owner.key)
            names = self._parameter_names[owner.key] = frozenset(function.parameters if function else ())
        return name in names

    def _reads_parameter(self, owner: Scope, name: str) -> bool:
        """Whether `name`, bound in `owner`, is a parameter of it and still holds the value passed (not a
        key a probing fold bound back to the name: `rng = jax.random.fold_in(rng, step)`)."""
        return self._is_parameter(owner, name) and id(self.scope.load(name)) not in self._folded_values

    def _note_probe(self, node: cst.BaseExpression) -> None:
        """`node` is only probed here (`.shape`, `isinstance(node, ...)`, `node is None`, printed)."""
        if isinstance(node, cst.Name):
            resolved = self.scope.resolve(node.value)
            if resolved is not None and self._reads_parameter(resolved[0], node.value):
                self.parameter_use.probed(resolved[0].key, node.value)

    def _note_fold(self, key: cst.BaseExpression, data: cst.BaseExpression) -> bool:
        """`jax.random.fold_in(key, data)`: a parameter `key` of this function folded with data read from
        its other parameters (not only their shape, not the method's receiver) is a probe of `key` (each
        call folds in its own data, unless it passes the same). Returns whether the result is a key of the
        call's own: such a fold, or any fold of a key such a fold made (`fold_in(rng, worker)` after
        `rng = fold_in(rng, step)`)."""
        if not isinstance(key, cst.Name):
            return False
        if id(self.scope.load(key.value)) in self._folded_values:
            return True
        resolved = self.scope.resolve(key.value)
        owner = self.scope.function_scope()
        if resolved is None or resolved[0] is not owner or not self._reads_parameter(owner, key.value):
            return False
        parameters = frozenset(
            name for name in _data_names(data)
            if name != key.value and name != owner.self_name and (found := self.scope.resolve(name)) is not None
            and found[0] is owner and self._is_parameter(owner, name)
        )
        if parameters:
            self.parameter_use.folded(owner.key, key.value, parameters)
        return bool(parameters)

    def _note_constant_fold(self, node: cst.Call) -> None:
        """`jax.random.fold_in(key, i)` of a parameter `key` with data read from no other parameter (a
        loop index, `lax.axis_index`, a constant): folding draws nothing from `key` (as JAX's key-reuse
        checker has it), so it is a probe. With a literal (`fold_in(key, 0)`), every call derives the same
        key: the function draws from `key` where it draws from that key (see :meth:`_note_draw`)."""
        key = node.args[0].value
        resolved = self.scope.resolve(key.value) if isinstance(key, cst.Name) else None
        owner = self.scope.function_scope()
        if isinstance(key, cst.Name) and resolved is not None and resolved[0] is owner \
                and self._reads_parameter(owner, key.value):
            self.parameter_use.probed(owner.key, key.value)
            if isinstance(node.args[1].value, (cst.Integer, cst.SimpleString)):
                self._constant_folds[id(node)] = key.value

    def _note_folded_binding(self, value: cst.BaseExpression, bound: Value) -> None:
        """`rng = jax.random.fold_in(rng, step)` (a fold probing parameter `rng`): the key `rng` holds from
        here on is its own, so reading it reads no parameter (see :meth:`_name`). `k = jax.random.fold_in(key,
        0)`: `k` is a key derived from parameter `key` (see :meth:`_note_constant_fold`)."""
        if id(value) in self._parameter_folds:
            self._folded_values[id(bound)] = bound
        if id(value) in self._constant_folds:
            self._derived_keys[id(bound)] = (bound, self._constant_folds[id(value)])

    def _only_probes(self, function: cst.BaseExpression) -> bool:
        """Whether `function` is a lambda (already evaluated) whose every parameter is only probed."""
        key = self.records.function_keys.get(id(function)) if isinstance(function, cst.Lambda) else None
        summary = self.functions.get(key) if key is not None else None
        if key is None or summary is None or not summary.parameters:
            return False
        return len(self.parameter_use.inert(key, summary.parameters)) == len(summary.parameters)

    def _attribute(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Attribute)
        receiver = self._eval(node.value)
        attr = node.attr.value
        base = self.records.references.get(id(node.value))
        if base is not None:
            self._reference(node, jax_api.canonical(f"{base}.{attr}"))
        read = self._attribute_read(node)
        if attr in PROBE_ATTRIBUTES:
            self._note_probe(node.value)
        if id(node.value) in self.records.outer_names:
            self.records.read_paths[id(node.value)] = attr
        if receiver.deps and attr in jax_api.ARRAY_VIEW_ATTRIBUTES:
            return Value(receiver.deps, receiver.flags & JAX_ARRAY if attr != "at" else 0)
        if read is None and receiver.deps and self.records.attribute_owners.get(id(node)) in self.records.array_fields:
            return Value(receiver.deps, ARRAY_VALUED)  # `state.step` of a `step: jax.Array` field: a leaf of the object
        if receiver.flags & FILESYSTEM_PATH and attr == "parent":
            return Value(NO_DEPS, FILESYSTEM_PATH)
        return read if read is not None else UNKNOWN

    def _subscript(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Subscript)
        value = self._eval(node.value)
        indices = self._slice(node.slice)
        key = structure.constant_key(node.slice)
        if isinstance(key, str) and id(node.value) in self.records.outer_names:
            self.records.read_paths[id(node.value)] = key
        if value.elements is not None and isinstance(key, int) and -len(value.elements) <= key < len(value.elements):
            return value.elements[key]
        field = value.field(key) if isinstance(key, str) else None
        if field is not None:
            return field
        item = combine((value.element(), *indices), value.flags & JAX_ARRAY)
        if value.returned is not None:
            item = replace(item, returned=value.returned.at(key))
        if value.flags & JAX_ARRAY and item:
            shape = shapes.indexed_shape(value.shape, node.slice)
            return replace(item, shape=shape) if shape is not None else item
        return item

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

    def _binary(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.BinaryOperation)
        left = self._eval(node.left)
        right = self._eval(node.right)
        flags = 0
        if isinstance(node.operator, _MASK_OPERATORS) and (left.flags | right.flags) & BOOL_MASK:
            flags = BOOL_MASK
        elif isinstance(node.operator, cst.Add) and left.flags & right.flags & PYTHON_CONTAINER:
            flags = PYTHON_CONTAINER
        elif isinstance(node.operator, cst.Multiply) and (left.flags | right.flags) & PYTHON_CONTAINER:
            if not (left.deps and right.deps):
                flags = PYTHON_CONTAINER
        elif isinstance(node.operator, _SET_OPERATORS) and left.flags & PYTHON_SET:
            flags = PYTHON_CONTAINER | PYTHON_SET  # `set(values) - allowed`
        elif isinstance(node.operator, cst.Divide) and left.flags & FILESYSTEM_PATH:
            flags = FILESYSTEM_PATH
        if not (left.flags | right.flags | flags) & (PYTHON_CONTAINER | FILESYSTEM_PATH):
            if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                flags |= _array_valued(left, right)  # NumPy defers to JAX arrays; `"%s" % x` is a str
        result = combine((left, right), flags)
        if result.flags & JAX_ARRAY and not isinstance(node.operator, cst.MatrixMultiply):
            shape = _elementwise_shape(node.left, left, node.right, right)
            return replace(result, shape=shape) if shape is not None else result
        return result

    def _unary(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.UnaryOperation)
        operand = self._eval(node.expression)
        if isinstance(node.operator, cst.Not):
            return UNKNOWN
        flags = operand.flags & BOOL_MASK if isinstance(node.operator, cst.BitInvert) else 0
        result = combine((operand,), flags | _array_valued(operand))
        if result.flags & JAX_ARRAY and operand.shape is not None:
            return replace(result, shape=operand.shape)
        return result

    def _boolean(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.BooleanOperation)
        left = self._eval(node.left)
        concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.left)
        # The right operand only runs when the left one is true (`and`) or false (`or`).
        narrowed = concrete_if_true if isinstance(node.operator, cst.And) else concrete_if_false
        return left.joined(self._eval_narrowed(node.right, narrowed))

    def _eval_narrowed(self, node: cst.BaseExpression, concrete: set[Narrowed]) -> Value:
        """Evaluate `node`, which may not run at all, in a branch where `concrete` names are known not
        to be tracers."""
        scope, function = self.scope, self.scope.function_scope()
        saved, saved_function = dict(scope.env), dict(function.env)
        self._assume_narrowed(concrete)
        self._conditional += 1
        try:
            return self._eval(node)
        finally:
            self._conditional -= 1
            function.env = saved_function
            scope.env = saved

    def _comparison(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Comparison)
        values = [self._eval(node.left)]
        values += [self._eval(target.comparator) for target in node.comparisons]
        if any(isinstance(target.operator, (cst.Is, cst.IsNot)) for target in node.comparisons):
            for operand in (node.left, *(target.comparator for target in node.comparisons)):
                self._note_probe(operand)
        if all(isinstance(target.operator, _ORDERING_OPERATORS) for target in node.comparisons):
            return combine(values, BOOL_MASK)
        return UNKNOWN

    def _if_exp(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.IfExp)
        self._eval(node.test)
        concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.test)
        return self._eval_narrowed(node.body, concrete_if_true).joined(self._eval_narrowed(node.orelse, concrete_if_false))

    def _sequence(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, (cst.Tuple, cst.List, cst.Set))
        values = [self._eval(element.value) for element in node.elements]
        deps = combine(values).deps
        if isinstance(node, cst.Set):
            return Value(deps, PYTHON_CONTAINER | PYTHON_SET)
        starred = any(isinstance(element, cst.StarredElement) for element in node.elements)
        return Value(deps, PYTHON_CONTAINER, None if starred else tuple(values))

    def _dict(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Dict)
        values: list[Value] = []
        fields: list[tuple[str, Value]] | None = []
        for element in node.elements:
            name = None
            if isinstance(element, cst.DictElement):
                self._eval(element.key)
                names = literal_strings(element.key) if isinstance(element.key, cst.SimpleString) else None
                name = names[0] if names else None
            values.append(self._eval(element.value))
            if name is None or fields is None:
                fields = None  # `**rest` or a computed key: the fields are not all known
            else:
                fields.append((name, values[-1]))
        return Value(combine(values).deps, PYTHON_CONTAINER, fields=None if fields is None else tuple(fields))

    def _starred(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.StarredElement)
        return self._eval(node.value).element()

    def _comprehension(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp))
        self._conditional += 1  # the element runs once per item: perhaps never
        try:
            with self._in_loop(node):
                return self._comprehension_body(node)
        finally:
            self._conditional -= 1

    def _comprehension_body(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> Value:
        outer = self.scope
        first = True
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            # The first iterable is evaluated in the enclosing scope, the rest inside the comprehension.
            iterable = self._eval(clause.iter)
            if first:
                self.scope = Scope(ScopeKind.COMPREHENSION, outer.key, outer)
                first = False
            self._bind(clause.target, self._iteration_value(clause.iter, iterable))
            for condition in clause.ifs:
                self._eval(condition.test)
            clause = clause.inner_for_in
        try:
            if isinstance(node, cst.DictComp):
                self._eval(node.key)
                element = self._eval(node.value)
            else:
                element = self._eval(node.elt)
        finally:
            self.scope = outer
        if isinstance(node, cst.GeneratorExp):
            return combine((element,))
        return Value(element.deps, PYTHON_CONTAINER | (PYTHON_SET if isinstance(node, cst.SetComp) else 0))

    def _lambda(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Lambda)
        self._eval_parameter_defaults(node.params)
        owner = self._child_key("")  # the key prefix of the enclosing scope
        count = self._lambda_counts.get(owner, 0) + 1
        if id(node) not in self.records.function_keys:
            self._lambda_counts[owner] = count
        key = self._new_function(node, f"<lambda#{count}>")
        outer, loops = self.scope, self._loops
        self.scope = self._function_scope(node, key, outer)
        self._loops = []
        try:
            body = self._eval(node.body)
        finally:
            self.scope, self._loops = outer, loops
        self.returns[key] = body
        return UNKNOWN

    def _named_expr(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.NamedExpr)
        value = self._eval(node.value)
        if isinstance(node.target, cst.Name):
            self.scope.function_scope().bind(node.target.value, VARIABLE, value)
        return value

    def _formatted_string(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.FormattedString)
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self._eval(part.expression)
        return UNKNOWN

    def _await(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Await)
        return self._eval(node.expression)

    def _yield(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Yield)
        if self._in_function:
            self.records.escaping_functions.add(self._function_key)  # a generator resumes after each `next`
        if isinstance(node.value, cst.From):
            self._eval(node.value.item)
        elif node.value is not None:
            self._eval(node.value)
        return UNKNOWN

    # ------------------------------------------------------------------------------------ calls
    def _call(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Call)
        early_args: list[Value] | None = None
        self._called_names.add(id(node.func))
        if node.args and isinstance(node.args[0].value, cst.Name) and self._transformed_here(node):
            self._called_names.add(id(node.args[0].value))  # `jax.jit(f)`: its calls are what program order sees
        if isinstance(node.func, cst.Call):
            self._immediate_calls[id(node.func)] = node
            if qualified_name(self.scope, node.func.func) in self.transforms:
                # `jax.jit(f)(x)`: read `x` first, so the root of `f` knows which arguments are arrays
                early_args = self._immediate_args[id(node)] = [self._eval(arg.value) for arg in node.args]
        called = self._eval(node.func)
        if isinstance(node.func, cst.Attribute):  # `CONFIG.get("wd")`: a method may read any part of its object
            self.records.read_paths.pop(id(node.func.value), None)
        name = qualified_name(self.scope, node.func)
        if name is None and self.scope.function_scope().kind is ScopeKind.MODULE and self._may_call_project(node, called):
            self.records.program_order.called_unresolved(self._code_scope, self._next_order())
        if name is not None:
            self.records.call_names[id(node)] = name
            if name in jax_api.X64_SWITCHES:
                self.enables_x64 = True
            if jax_api.is_random_call(name) or name in jax_api.PARTIAL and node.args and jax_api.is_random_call(
                qualified_name(self.scope, node.args[0].value)
            ):  # `partial(jax.random.normal, key)` draws where it is called
                self.records.random_scopes.add(self._function_key)
                self._note_draw(node, name)
            elif self._is_library(name) and _passes_key(node):  # a library call taking `key=` (`eqx.nn.Linear(2, 2, key=k)`) draws from it
                self.records.random_scopes.add(self._function_key)
            if name == KEY_REWRAP and node.args:  # `wrap_key_data(key_data(key))` rebuilds the key: no probe
                self._rewrapped.add(id(node.args[0].value))
            if (name in PROBE_CALLS or name in KEY_VIEWS and id(node) not in self._rewrapped) and node.args:
                self._note_probe(node.args[0].value)
            elif name in FORMATTING_CALLS:
                for arg in node.args:
                    self._note_probe(arg.value)
            elif name == jax_api.KEY_FOLD and len(node.args) >= 2:
                if self._note_fold(node.args[0].value, node.args[1].value):
                    self._parameter_folds.add(id(node))
                else:
                    self._note_constant_fold(node)
        args = early_args if early_args is not None else [self._eval(arg.value) for arg in node.args]
        if name in TREE_MAPS and node.args and self._only_probes(node.args[0].value):
            for arg in node.args[1:]:
                if arg.keyword is None and not arg.star:
                    self._note_probe(arg.value)
        if name in TREE_MAPS and node.args and node.args[0].keyword is None and not node.args[0].star:
            self._tree_map_edge(node, args)
        if name is None or not name.startswith(jax_api.PURE_CALL_PREFIXES):
            for arg in node.args:  # `to_numpy(params)` may replace what `params` holds
                self._forget_structure(arg.value)
        staged = UNKNOWN if self._eager_blocks.get(self._function_key) else self._staged_here()
        transform = self.transforms.get(name) if name is not None else None
        if transform is not None:
            self._transform_call(node, transform)
            return UNKNOWN
        configured = self._configured_transform(node.func) if isinstance(node.func, cst.Call) else None
        if configured is not None and all(arg.keyword is not None for arg in configured[1]):
            self._transform_call(node, *configured)  # `functools.partial(jax.vmap, in_axes=(0, None))(f)`
            return UNKNOWN
        if name in jax_api.HOST_CALLBACKS or name in jax_api.REF_KERNEL_CALLS:
            registry = self.records.host_functions if name in jax_api.HOST_CALLBACKS else self.records.ref_kernels
            callee = self._callable_key(argument(node, 0, ("callback", "f", "kernel", "body")))
            if callee is not None:
                registry.add(callee)
        if name in jax_api.CONCRETE_RESULT_CALLS:
            return UNKNOWN
        if name in jax_api.CONSTANT_COLLECTIVES and args and not args[0].deps:
            return UNKNOWN  # `lax.psum(1, axis)`: a Python value
        if name in jax_api.LAX_BODIES:
            self._lax_call(node, name, args)
            return combine((staged, *args))
        if isinstance(node.func, cst.Call) and self.records.call_names.get(id(node.func)) in self.transforms:
            self.records.called_transforms.add(id(node.func))
            self._record_transformed_call(node, node.func, args)
            # `jax.jit(f)(x)`, `jax.value_and_grad(loss)(params)`; `jax.grad(loss)(w)` of an array is one
            gradient = self.records.call_names.get(id(node.func)) in jax_api.GRADIENT_TRANSFORMS
            flags = JAX_ARRAY if gradient and len(node.func.args) == 1 and self._first_is_array(node.args, args) else 0
            return combine((staged, *args), flags)
        method_call = self._called_method(node.func, called)
        if method_call is not None:  # `model(x)`, `model.encode(x)`, Flax `model.apply(variables, x)`
            method, applied = method_call
            if applied:  # `model.apply(v, x, method=Model.encode)` runs `encode`
                chosen = self._applied_method(node.args, method)
                if chosen is None:
                    return _opaque(args)
                call_args, values = self._apply_arguments(node.args, args)
                return self._local_call(node, chosen, values, 1, call_args)
            return self._local_call(node, method, args, 1)
        slot = self._attribute_owner(node.func)
        if slot is not None and slot in self._transformed_attributes:  # `self._act(q)`: the jitted method runs
            self.records.transformed_calls.add(id(node))
            return self._local_call(node, self._transformed_attributes[slot], args, 1)
        if isinstance(node.func, cst.Name):
            owner = self._owner(node.func.value)
            target = self.records.program_order.transformed_target(owner.key, node.func.value) if owner else None
            if target is not None:
                self._call_event(node, target)
            if owner is not None and (owner.key, node.func.value) in self._transform_results:
                self.records.transformed_calls.add(id(node))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("defjvp", "defvjp"):
            self._custom_rules(node)
        if name in jax_api.PYTREE_REGISTRATIONS and node.args and isinstance(node.args[0].value, cst.Name):
            registered = self.scope.lookup(node.args[0].value.value)
            if registered is not None and registered.kind is BindingKind.CLASS:
                self.drop_fields(registered.target)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATING_METHODS:
            self._record_mutation(node.func, containers_only=True)
            self._forget_structure(node.func.value)
        if name is None and called.flags & KEY_TAKING_LAYER and _passes_key(node):
            self.records.random_scopes.add(self._function_key)  # `drop(x, key=k)` draws from `k`
        if name is not None:
            if (name.startswith(jax_api.KEY_TAKING_LIBRARIES) and name.rpartition(".")[2][:1].isupper()
                    and self._is_library(name)):
                return Value(NO_DEPS, KEY_TAKING_LAYER)  # `eqx.nn.Dropout(0.5)`: a layer taking its key per call
            kind = _OBJECT_FACTORIES.get(name)
            if kind is not None:
                fresh = self._in_function and name in _SEEDED_BY_ARGUMENT and _seeded(node)  # not one kept by the module
                return Value(NO_DEPS, kind | (SEEDED_GENERATOR if fresh else 0))
            if name == "builtins.setattr" and node.args and isinstance(node.args[0].value, cst.Name):
                attribute = node.args[1].value if len(node.args) > 1 else None
                names = literal_strings(attribute) if isinstance(attribute, cst.SimpleString) else None
                path = names[0] if names else None
                self._record_mutated_name(node.args[0].value, node, path)
            if name in jax_api.ARRAY_PRESERVING_CALLS and self._first_is_array(node.args, args):
                return combine((staged, *args), JAX_ARRAY)
            if name == jax_api.STOP_GRADIENT:
                return combine((staged, *args), GRADIENT_STOPPED)
            if jax_api.is_array_call(name):
                flags = BOOL_MASK if name in jax_api.BOOL_RESULT_CALLS else 0
                flags |= JAX_ARRAY if jax_api.returns_array(name) else 0
                flags |= PYTHON_CONTAINER if name in jax_api.TUPLE_RESULT_CALLS else 0  # `w, v = eigh(m)`
                shape = shapes.created_shape(name, node, self._certain_shape) if flags & JAX_ARRAY else None
                return replace(combine((staged, *args), flags), shape=shape) if shape is not None \
                    else combine((staged, *args), flags)
            if name in _ELEMENTWISE_BUILTINS:
                return combine(args)
            if name in _CONTAINER_BUILTINS:
                fields = structure.keyword_fields(node.args, args) if name == "builtins.dict" else None
                kind = PYTHON_CONTAINER | (PYTHON_SET if name in _SET_BUILTINS else 0)
                return Value(combine(args).deps, kind, fields=fields)
            created = self._instance_created(name)
            if created is not None:
                return created
            if name in self.functions:
                return self._local_call(node, name, args, 0)
            if name.startswith("numpy.") and jax_api.returns_array(f"jax.{name}") and not combine(args).deps:
                return Value(NO_DEPS, NUMPY_ARRAY)  # `np.eye(4)`: a concrete NumPy array
            if name.startswith(_EXTERNAL_PREFIXES):
                return UNKNOWN
            return self._project_call(node, name, args)
        self_method = self._method_key(node.func)
        if self_method is not None:
            self.records.call_names.setdefault(id(node), self_method)  # `self.m(...)` calls this module's `m`
            return self._local_call(node, self_method, args, self._self_bound(self_method))
        if isinstance(node.func, cst.Attribute):
            receiver = self._known(node.func.value)
            attr = node.func.attr.value
            array = at_receiver(node.func)
            if array is not None:  # `x.at[i].set(v)` has the shape of `x`
                shape = self._certain_shape(array) if attr != "get" else None
                return replace(combine((receiver, *args), JAX_ARRAY), shape=shape)
            if receiver.deps and attr in jax_api.ARRAY_METHODS:
                flags = BOOL_MASK if attr in jax_api.BOOL_METHODS else 0
                result = combine((receiver, *args), flags | _array_valued(receiver))
                shape = shapes.method_shape(attr, node, self._certain_shape(node.func.value))
                return replace(result, shape=shape) if shape is not None and result.flags & JAX_ARRAY else result
            if receiver.flags & FILESYSTEM_PATH and attr in _PATH_METHODS:
                return Value(NO_DEPS, FILESYSTEM_PATH)
            if attr not in jax_api.CONCRETE_METHODS and attr not in jax_api.STRUCTURE_METHODS:
                return _opaque([receiver, *args])  # `net.apply(w, x)`, `state.replace(step=s)`
            return UNKNOWN
        if isinstance(node.func, cst.Name) and self._is_own_parameter(node.func.value):
            arguments = self._arguments(node.args, args, 0)  # `model(x)`: what a caller passes runs here
            self._called_params.setdefault(self._function_key, []).append((node.func.value, arguments))
        return _opaque(args)  # a callable parameter or local: `apply_fn(params, x)`

    def _certain_shape(self, node: cst.BaseExpression) -> tuple[int, ...] | None:
        """The certain shape of an evaluated expression that is known to be a JAX array, else None."""
        value = self._known(node)
        return value.shape if value.flags & JAX_ARRAY else None

    def _first_is_array(self, args: Sequence[cst.Arg], values: Sequence[Value]) -> bool:
        """Whether the first argument is an array: a JAX array, or a NumPy call that returns one
        (`np.zeros(3)`: NumPy mirrors `jax.numpy`)."""
        if not args or args[0].keyword is not None or args[0].star:
            return False
        if values[0].flags & JAX_ARRAY:
            return True
        name = self.records.call_names.get(id(args[0].value))
        return name is not None and name.startswith("numpy.") and jax_api.returns_array(f"jax.{name}")

    def _arguments(self, call_args: Sequence[cst.Arg], args: list[Value], bound: int) -> CallArguments:
        positional: list[Deps] = []
        keywords: list[tuple[str, Deps]] = []
        facts = _argument_facts(call_args, args)
        has_star = False
        for arg, value in zip(call_args, args):
            if arg.star:
                has_star = True
            elif arg.keyword is not None:
                keywords.append((arg.keyword.value, value.deps))
            elif not has_star:
                positional.append(value.deps)
        callables: list[tuple[int | str, str, int]] = []
        position = 0
        for arg, value in zip(call_args, args):
            if arg.star:
                break
            slot = arg.keyword.value if arg.keyword is not None else position
            target = self._function_target(arg.value)
            method = self._method_of(value.instance, "__call__") if value.instance is not None else None
            if target is not None:
                callables.append((slot, target, 0))
            elif method is not None:  # `step(model, x)`: `model(x)` in `step` runs `MLP.__call__`
                callables.append((slot, method, 1))
            position += arg.keyword is None
        return CallArguments(tuple(positional), tuple(keywords), bound, has_star, callables=tuple(callables),
                             **facts._asdict())

    def _is_library(self, name: str) -> bool:
        """Whether `name` is a callable of another package, not one that only moves keys (`builtins`,
        JAX internals, NumPy): a project's own classes store a `key=` they are given."""
        project = self.module_name.partition(".")[0]
        return name.partition(".")[0] != project and not name.startswith(jax_api.KEY_NEUTRAL_PREFIXES)

    def _note_draw(self, node: cst.Call, name: str) -> None:
        """A `jax.random` call consuming its key: when that key is still the current function's
        parameter, callers that pass one key twice to this function reuse it."""
        key = argument(node, 0, ("key",))
        if name in jax_api.NON_CONSUMING_RANDOM or not self._in_function or not isinstance(key, cst.Name):
            return
        parameter = key.value if self._holds_parameter(key.value, self._function_key) else None
        if parameter is None and (derived := self._derived_keys.get(id(self.scope.load(key.value)))) is not None:
            parameter = derived[1]  # a key folded from it
        if parameter is not None:
            self._draws.setdefault(self._function_key, set()).add(parameter)

    def _local_call(self, node: cst.Call, key: str, args: list[Value], bound: int,
                    call_args: Sequence[cst.Arg] | None = None) -> Value:
        """A call of this module's function `key` with `args` (the values of `call_args`, by default the
        call's own arguments)."""
        call_args = node.args if call_args is None else call_args
        self._note_tracer_rejection(call_args, key, bound)
        arguments = self._record_edge(node, key, args, bound, call_args)
        unless, absent, truthy = self._branch_guard()
        call = CallDep(self._function_key, key, arguments, unless=unless, absent=absent, truthy=truthy)
        return Value(frozenset({call}), returned=Returned(key))

    def _project_call(self, node: cst.Call, name: str, args: list[Value]) -> Value:
        """A call of `name`, maybe a function of another project module (`energy.kinetic(v)`), maybe a
        library's (`optax.global_norm(g)`): opaque, and also what the project function returns from these
        arguments when the solve knows `name` as one (a name it does not know returns nothing traced)."""
        arguments = self._record_edge(node, name, args, 0)
        opaque = _opaque(args)
        if not opaque.deps:
            return replace(opaque, returned=Returned(name))
        unless, absent, truthy = self._branch_guard()
        call = CallDep(self._function_key, name, arguments, unless=unless, absent=absent, truthy=truthy)
        return Value(opaque.deps | {call}, returned=Returned(name))

    def _staged_here(self) -> Value:
        """What the result of an array operation at this point depends on (see `_BRANCH`)."""
        return self._env.get(_BRANCH) or Value(frozenset({StagedDep(self._function_key)}))

    def _branch_guard(self) -> Guard:
        """The guards every path to this point holds (see `_BRANCH`)."""
        paths = [dep for dep in self._staged_here().deps if isinstance(dep, StagedDep)]
        if not paths:
            return Guard(frozenset(), frozenset(), frozenset())
        return Guard(frozenset.intersection(*(dep.unless for dep in paths)),
                     frozenset.intersection(*(dep.absent for dep in paths)),
                     frozenset.intersection(*(dep.truthy for dep in paths)))

    def _tree_map_edge(self, node: cst.Call, args: list[Value]) -> None:
        """`jax.tree.map(f, tree, ...)` calls `f` right here, once per leaf, with the leaves of the trees
        at the same place: an edge to `f` (a lambda or a function of the project) passing the trees'
        values (the edge's site is `f`'s expression, as the call itself is external)."""
        target = self._function_target(node.args[0].value)
        if target is None or target.startswith(_EXTERNAL_PREFIXES):
            return
        leaves = [arg for arg in node.args[1:] if arg.keyword is None and not arg.star]
        arguments = self._arguments(leaves, args[1 : 1 + len(leaves)], 0)
        self._add_edge(node.args[0].value, CallEdge(self._function_key, target, arguments))

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

    def _record_edge(self, node: cst.Call, callee: str, args: list[Value], bound: int,
                     call_args: Sequence[cst.Arg] | None = None) -> CallArguments:
        """Record the call `node` of `callee` (at module level too: which arguments a function is ever
        passed decides which of its defaulted parameters can hold tracers)."""
        arguments = self._arguments(node.args if call_args is None else call_args, args, bound)
        caller = self._function_key
        self._call_event(node, callee)
        if self._loops:
            self.repeated_calls.add(callee)
        self._add_edge(node, CallEdge(caller, callee, arguments))
        return arguments

    def _record_transformed_call(self, node: cst.Call, transform_call: cst.Call, args: list[Value]) -> None:
        """`jax.jit(f)(x)`: `f` is called with these arguments."""
        target = argument(transform_call, 0, ("fun", "f"))
        if target is None:
            return
        method = self._method_key(target)
        name = method or qualified_name(self.scope, target)
        if name is not None and not name.startswith(_EXTERNAL_PREFIXES):
            self._record_edge(node, name, args, self._self_bound(method) if method else 0)

    def _note_transformed_param(self, target: cst.BaseExpression, spec: TraceSpec) -> None:
        """`jax.grad(loss_fn)` where `loss_fn` is a parameter: the function a caller passes is traced."""
        if not isinstance(target, cst.Name):
            return
        resolved = self.scope.resolve(target.value)
        if resolved is not None and self._is_parameter(resolved[0], target.value):
            self._transformed_params.setdefault(resolved[0].key, []).append((target.value, spec))

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
        return name if name is not None and not name.startswith(_EXTERNAL_PREFIXES) else None

    def _instance_target(self, target: cst.BaseExpression, spec: TraceSpec) -> bool:
        """`jax.vmap(model)`, `jax.jit(model.apply)`, `jax.jit(model.encode)` on an instance of this
        module's class: the transform traces that method (self bound; `apply` drops the variables)."""
        method_call = self._called_method(target, self.records.values.get(id(target), UNKNOWN))
        if method_call is None:
            return False
        method, applied = method_call
        self._add_root(method, (spec.without_first_argument() if applied else spec).binding(1))
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
            inner = self._callable_key(target) if self._in_function else None
            if inner is not None:  # `jax.grad(loss)(p)` inside a jitted body: `loss` runs under that jit too
                self._add_edge(target, CallEdge(self._function_key, inner, CallArguments()))
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
        if name is not None and not name.startswith(_EXTERNAL_PREFIXES) and spec.unbatched_positions:
            bound = spec.bound_positional + partial_bound + (self._self_bound(method) if method else 0)
            self.records.unbatched_targets[id(node)] = (name, replace(spec, bound_positional=bound))

    def _callable_key(self, target: cst.BaseExpression | None) -> str | None:
        """The key of a function of this module that `target` names (a lambda, `f`, `partial(f, ...)`,
        an instance of the module's class, `model.apply`)."""
        if isinstance(target, cst.Lambda):
            return self.records.function_keys.get(id(target))
        if isinstance(target, cst.Call) and self.records.call_names.get(id(target)) in jax_api.PARTIAL and target.args:
            return self._callable_key(target.args[0].value)
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
        facts = _argument_facts(call.args, self._immediate_args.get(id(call), []))
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
        if not self._in_function:
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
                facts = _argument_facts(operand_args, operand_values)
                operands = CallArguments(tuple(value.deps for value in operand_values), **facts._asdict())
                spec = replace(spec, **facts._asdict())
            body = argument(node, slot.position, (slot.keyword,))
            if body is None:
                continue
            bodies = [e.value for e in body.elements] if slot.sequence and isinstance(body, (cst.List, cst.Tuple)) else [body]
            for each in bodies:
                self._register_target(each, spec if not self._created_per_call(each) else
                                      replace(spec, caches=False, caches_with=self._function_key))
                target = qualified_name(self.scope, each)
                if target is not None:
                    self._call_event(node, target)
                    if operands is not None:
                        self._add_edge(each, CallEdge(self._function_key, target, operands))


# The interpreters of statements and expressions by node type: class-level, so a builder holds no bound
# methods of its own (they would make it a reference cycle, which only the cyclic collector frees).
_STATEMENT_HANDLERS: dict[type[cst.CSTNode], Callable[[ModelBuilder, cst.CSTNode], None]] = {
    cst.SimpleStatementLine: ModelBuilder._simple_statement_line,
    cst.FunctionDef: ModelBuilder._function_def,
    cst.ClassDef: ModelBuilder._class_def,
    cst.If: ModelBuilder._if,
    cst.For: ModelBuilder._for,
    cst.While: ModelBuilder._while,
    cst.Try: ModelBuilder._try,
    cst.TryStar: ModelBuilder._try,
    cst.With: ModelBuilder._with,
    cst.Match: ModelBuilder._match,
}
_EXPRESSION_HANDLERS: dict[type[cst.CSTNode], Callable[[ModelBuilder, cst.CSTNode], Value]] = {
    cst.Name: ModelBuilder._name,
    cst.Attribute: ModelBuilder._attribute,
    cst.Call: ModelBuilder._call,
    cst.Subscript: ModelBuilder._subscript,
    cst.BinaryOperation: ModelBuilder._binary,
    cst.UnaryOperation: ModelBuilder._unary,
    cst.BooleanOperation: ModelBuilder._boolean,
    cst.Comparison: ModelBuilder._comparison,
    cst.IfExp: ModelBuilder._if_exp,
    cst.Tuple: ModelBuilder._sequence,
    cst.List: ModelBuilder._sequence,
    cst.Set: ModelBuilder._sequence,
    cst.Dict: ModelBuilder._dict,
    cst.ListComp: ModelBuilder._comprehension,
    cst.SetComp: ModelBuilder._comprehension,
    cst.GeneratorExp: ModelBuilder._comprehension,
    cst.DictComp: ModelBuilder._comprehension,
    cst.Lambda: ModelBuilder._lambda,
    cst.NamedExpr: ModelBuilder._named_expr,
    cst.FormattedString: ModelBuilder._formatted_string,
    cst.Await: ModelBuilder._await,
    cst.Yield: ModelBuilder._yield,
    cst.StarredElement: ModelBuilder._starred,
    cst.SimpleString: ModelBuilder._string,
}


# ------------------------------------------------------------------------------------- helpers




def _array_valued(*operands: Value) -> int:
    """The flags of arithmetic (or an array method) on `operands`: a JAX array when one of them is;
    otherwise, when one of them depends on a parameter or call, an array whenever it is traced."""
    flags = 0
    for operand in operands:
        flags |= operand.flags & (JAX_ARRAY | ARRAY_VALUED)
        if operand.deps:
            flags |= ARRAY_VALUED
    return flags


class _ArgumentFacts(NamedTuple):
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


_NEVER_NONE = (
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda,
)


def _argument_facts(args: Sequence[cst.Arg], values: Sequence[Value]) -> _ArgumentFacts:
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
    return _ArgumentFacts(frozenset(arrays[0]), frozenset(arrays[1]), frozenset(present[0]), frozenset(present[1]),
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










def _data_names(node: cst.CSTNode) -> Iterator[str]:
    """The names whose values `node` reads, not counting those it only probes (`x.ndim`, `x.shape[0]`)
    nor the bodies of lambdas."""
    if isinstance(node, cst.Name):
        yield node.value
    elif isinstance(node, cst.Attribute) and node.attr.value in PROBE_ATTRIBUTES:
        return
    elif not isinstance(node, cst.Lambda):
        for child in child_nodes(node):
            yield from _data_names(child)


def _passes_key(node: cst.Call) -> bool:
    """Whether a call passes a keyword argument named like a PRNG key (`key=`, `rng=`, `*_key=`)."""
    return any(arg.keyword is not None and is_key_like_name(arg.keyword.value) for arg in node.args)


def _seeded(factory: cst.Call) -> bool:
    """Whether a generator factory call passes a literal integer seed (`0`, `(1, 2)`): a name may hold
    None (entropy), a shared generator or a traced value."""
    seed = argument(factory, 0, ("seed",))
    return seed is not None and literal_ints(seed) is not None


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


def _always_exits(suite: cst.BaseSuite) -> bool:
    """True when a block ends in `raise` or `return`: code after its `if` runs only when the test was
    false. (`continue`/`break` are not counted: their values still flow around the loop.)"""
    return isinstance(last_statement(suite), (cst.Raise, cst.Return))


def _elementwise_shape(left_node: cst.BaseExpression, left: Value, right_node: cst.BaseExpression,
                       right: Value) -> tuple[int, ...] | None:
    """The certain shape of elementwise arithmetic: both operands of one known shape, or one of a known
    shape and the other a number literal."""
    if left.shape is not None and (left.shape == right.shape or shapes.broadcast_literal(right_node)):
        return left.shape
    if right.shape is not None and shapes.broadcast_literal(left_node):
        return right.shape
    return None


def _captured_names(pattern: cst.MatchPattern) -> list[str]:
    """The names a `case` pattern binds (`case [x, *rest]:`, `case {"k": v, **others}:`, `case p as q:`)."""
    names: list[str] = []
    pending: list[cst.CSTNode] = [pattern]
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.MatchAs, cst.MatchStar)) and isinstance(node.name, cst.Name):
            names.append(node.name.value)
        if isinstance(node, cst.MatchMapping) and node.rest is not None:
            names.append(node.rest.value)
        pending.extend(child_nodes(node))
    return names


def _opaque(values: list[Value]) -> Value:
    """The result of a call the model cannot see into, given `values`: it holds a tracer when they do."""
    deps = combine(values).deps
    return Value(frozenset({OpaqueDep(deps)})) if deps else UNKNOWN
