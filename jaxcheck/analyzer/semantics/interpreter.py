"""The interpreter's core: the state of one module's reading, and the primitives every part shares.

:class:`InterpreterCore` holds the scopes and their environments of abstract values, the stacks of
branches and loops around the point being read, the work budget, the module's records and function
table, and the collectors the reading feeds (see :mod:`.collectors`). The parts of the interpreter
build on it, each a class over the one below (a reader can name them):

- :mod:`.stores` records what assignments, item stores and mutations change;
- :mod:`.definitions` reads imports, `def` and `class`, and runs function bodies;
- :mod:`.transform_calls` reads the calls of JAX transforms and lax control flow;
- :mod:`.calls` values every other call, by the call table (:mod:`.call_table`);
- :mod:`.expressions` values expressions;
- :mod:`.flow` gives each statement its meaning, walked by the one flow driver (:mod:`.control_flow`:
  branches, loops, `try`, `with`, `match` and exits), which the PRNG analysis (:mod:`.prng`) runs on too;
- :mod:`.builder` puts them together and emits the module summary.

An expression is read by :meth:`InterpreterCore._eval` and a block by :meth:`InterpreterCore._suite`,
which the upper parts provide. Cost: each step spends the budget of :mod:`.budget`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import libcst as cst

from jaxcheck.analyzer.semantics.budget import Budget
from jaxcheck.analyzer.semantics.collectors import Collector
from jaxcheck.analyzer.semantics.control_flow import LoopFrame
from jaxcheck.analyzer.semantics.frameworks import Framework
from jaxcheck.analyzer.semantics.guards import Guard, Guarding, GuardReader, KeyTest, Narrowed, Narrowing, Slot
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.objects import ObjectReader
from jaxcheck.analyzer.semantics.program_order import CallEvent
from jaxcheck.analyzer.semantics.records import ModuleRecords, OuterName, cut_region
from jaxcheck.analyzer.semantics.references import ReferenceReader
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, ScopeKind
from jaxcheck.analyzer.semantics.summary import ArrayLeaf, CallEdge, FunctionSummary, TraceRoot, TraceSpec
from jaxcheck.analyzer.semantics.syntax import target_names
from jaxcheck.analyzer.semantics.trace_roots import TraceRootReader
from jaxcheck.analyzer.semantics.values import ARRAY_VALUED, CallArguments, JAX_ARRAY, UNKNOWN, StagedDep, Value

Env = dict[str, Value]
IfFacts = tuple[tuple[set[Narrowed], set[Narrowed]], tuple[list[Slot], list[Slot]]]
"""What an `if` test proves in its two alternatives: the names known concrete, the cache slots known empty."""
FunctionNode = cst.FunctionDef | cst.Lambda
BRANCH = " branch"
"""A function environment's entry for the code being read: what a new array operation there depends on,
`StagedDep(function)` guarded like every value of the environment when a test narrows the branch (two of
them after branches join). Kept in the environment, so it is saved, guarded and joined with it; never
the name of a variable (it is no identifier)."""
EXTERNAL_PREFIXES = ("builtins.", "jax.", "numpy.", "math.", "functools.", "typing.")
"""Namespaces of callables that are not the project's: a call of one is no call edge."""


@dataclass(slots=True)
class PendingBody:
    """A function body to read once the scope defining it is complete."""

    node: FunctionNode
    key: str
    scope: Scope


def array_valued(*operands: Value) -> int:
    """The flags of arithmetic (or an array method) on `operands`: a JAX array when one of them is;
    otherwise, when one of them depends on a parameter or call, an array whenever it is traced."""
    flags = 0
    for operand in operands:
        flags |= operand.flags & (JAX_ARRAY | ARRAY_VALUED)
        if operand.deps:
            flags |= ARRAY_VALUED
    return flags


class InterpreterCore(TraceRootReader, ObjectReader, GuardReader, ReferenceReader):
    """The state of one module's reading and the primitives its parts share (see the module docstring)."""

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
        """Callees called inside a loop."""
        self.unfollowed: set[str] = set()
        """Functions that apply a caching transform to a callable made from a parameter in a way the model
        does not follow (`jax.jit(decorate(fn))`): the functions passed there are not known traced."""
        self.called_twice: set[str] = set()
        """Callees called at two sites of one caller that one run of it can both reach."""
        self._call_sites: dict[tuple[str, str], dict[int, tuple[tuple[int, int], ...]]] = {}
        """(caller, callee) -> the branch path (see `_branches`) of each call site, by node id."""
        self.enables_x64 = False
        self._transform_results: set[tuple[str, str]] = set()
        """(code scope, name) pairs bound to a transform's result (`step = jax.jit(f)`), whatever `f` is."""
        self._transformed_attributes: dict[tuple[str, str], str] = {}
        """(class key, attribute) -> the method a transform stored there wraps (`self._act =
        jax.jit(self._act_impl)` in a method): `self._act(q)` in the class's methods runs that method."""
        self.wide_dtypes = False
        self._eager_blocks: dict[str, int] = {}
        """How many `with jax.ensure_compile_time_eval():` blocks each function is inside here: there, array
        operations on concrete values are computed at once, not staged (the function's own body only:
        a function defined in the block runs later, outside it)."""
        self._called_names: set[int] = set()
        """Names (by id) read to be called or transformed right there (`f(x)`, `jax.jit(f)`), not as values."""
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
        self._conditional = 0
        """How many enclosing expressions may skip what is being evaluated (`a if c else b`, `x and y`)."""
        self._empty_slots: list[tuple[Slot, int]] = []
        """The cache slots the guards around the current point prove empty, each with how many loops were
        open where its guard was tested (a slot filled in a loop inside the guard is filled repeatedly)."""
        self._loop_targets: dict[int, frozenset[str]] = {}
        """Per loop (by node id), the names its header binds anew each iteration (`for name, fn in ...`)."""
        self._lookups: dict[str, KeyTest] = {}
        """Names of the function being read that hold `table.get(k)` (for `if f is None:`)."""
        self._concrete_after_statement: set[Narrowed] = set()
        self._immediate_args: dict[int, list[Value]] = {}
        """The argument values of those calls (`x`), by the id of the call."""
        self.returns: dict[str, Value] = {}
        self.tuple_returns: dict[str, tuple[Value, ...] | None] = {}
        self._return_leaves: dict[str, frozenset[ArrayLeaf]] = {}
        self._called_params: dict[str, list[tuple[str, CallArguments]]] = {}
        self.framework_classes: dict[str, frozenset[Framework]] = {}
        """Classes of this module deriving from a framework's classes, with those frameworks (see
        :mod:`.frameworks`)."""
        self.attribute_methods: set[str] = set()
        """Methods read as attributes (`@property`, `functools.cached_property`): `self.m` is their value."""
        self.static_methods: set[str] = set()
        self.scope = Scope(ScopeKind.MODULE, module_name, None)
        self._pending: deque[PendingBody] = deque()
        self._lambda_counts: dict[str, int] = {}
        self._budget = Budget()
        self._narrowings: dict[int, Narrowing] = {}
        self._guardings: dict[tuple[str, Guard], Guarding] = {}
        self._function_bodies: dict[str, cst.FunctionDef] = {}
        self._predicates: dict[str, tuple[str, cst.BaseExpression]] = {}
        self._rebound: dict[str, frozenset[str]] = {}
        self._unguarded_statements: set[int] = set()
        """Statements some pass of a loop read outside any guard (see `_note_branch`)."""
        self._branches: list[tuple[int, int]] = []
        self._loops: list[int] = []
        self._loop_frames: list[LoopFrame[Env]] = []
        self._if_tests: dict[int, IfFacts] = {}
        """What the `if` statements being read prove in each alternative, by node id (see `FlowDriver._if_facts`)."""
        self._loop_items: dict[int, Value] = {}
        """The item value of each `for` loop being read, by node id."""
        self._order = 0
        self._outer_names: dict[tuple[str, BindingKind], OuterName] = {}
        self._transformed_locals: list[tuple[str, TraceSpec, str]] = []
        """Functions defined in a function and transformed there (`return jax.jit(wrapped)`), with the spec and
        that function: a project's jit wrapper (see `builder.ModelBuilder._wrapped_parameters`)."""
        self._outer_parameter_calls: dict[str, set[tuple[str, str]]] = {}
        """Per function key, the (function, parameter) pairs of enclosing functions it calls (`fn(*args)`)."""
        self._kept_transforms: dict[str, dict[str, int]] = {}
        """Per function key, the names its transform sites' results are bound to (`step = jax.jit(f)`, a
        decorated `def`), with the site (by node id): see :meth:`DefinitionReader._note_reused_transforms`."""
        self.collectors: tuple[Collector, ...] = ()
        """The collectors of facts the interpretation's events feed (see :mod:`.collectors`), for one build."""

    @abstractmethod
    def _eval(self, node: cst.BaseExpression) -> Value:
        """Interpret `node` and its sub-expressions; record and return its abstract value."""

    @abstractmethod
    def _suite(self, suite: cst.BaseSuite) -> None:
        """Interpret the statements of `suite` in order."""

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

    def _note_branch(self, node: cst.CSTNode) -> None:
        """Record the guards of the branch `node` (a statement, a read) runs in, when it is guarded on
        every pass the builder reads it (a loop body is read twice: the guards of both passes count)."""
        entry = self.scope.function_scope().env.get(BRANCH)
        key = id(node)
        if entry is not None and all(isinstance(dep, StagedDep) and dep.guarded for dep in entry.deps):
            if key not in self._unguarded_statements:
                self.records.branch_guards[key] = self.records.branch_guards.get(key, frozenset()) | entry.deps
        elif self._loops:  # read again on the loop's next pass: stays unguarded
            self.records.branch_guards.pop(key, None)
            self._unguarded_statements.add(key)

    @property
    def function_key(self) -> str:
        """The key of the function (or module) whose code is being read."""
        return self.scope.function_scope().key

    @property
    def in_function(self) -> bool:
        """Whether the code being read is a function's body (not module-level code)."""
        return self.scope.function_scope().kind is ScopeKind.FUNCTION

    @property
    def _records_transform_sites(self) -> bool:
        """Transform sites matter inside functions, and in module-level loops (module code runs once)."""
        return self.in_function or bool(self._loops)

    @property
    def _site_function(self) -> str | None:
        """The function a transform site is in (None at module level)."""
        return self.function_key if self.in_function else None

    @contextmanager
    def _in_loop(self, node: cst.CSTNode) -> Iterator[None]:
        """Inside the loop (or comprehension) `node`: its id on the loop stack, its header's names noted."""
        if isinstance(node, cst.For):
            self._loop_targets[id(node)] = frozenset(target_names(node.target))
        self._loops.append(id(node))
        try:
            yield
        finally:
            self._loops.pop()

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

    def _next_order(self) -> int:
        """A counter of binding events and definitions, increasing in traversal order."""
        self._order += 1
        return self._order

    def _owner(self, name: str) -> Scope | None:
        """The module or function scope whose variable `name` is, as seen from here."""
        resolved = self.scope.resolve(name)
        if resolved is None or resolved[0].kind not in (ScopeKind.MODULE, ScopeKind.FUNCTION):
            return None
        return resolved[0]

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

    def _known(self, node: cst.BaseExpression) -> Value:
        """The value already recorded for an evaluated expression."""
        return self.records.values.get(id(node), UNKNOWN)

    def _is_own_parameter(self, name: str) -> bool:
        """Whether `name` here is a parameter of the function being interpreted (not of an enclosing one)."""
        resolved = self.scope.resolve(name)
        if resolved is None:
            return False
        owner = resolved[0]
        return owner is self.scope.function_scope() and self.is_parameter(owner, name)

    def is_parameter(self, owner: Scope, name: str) -> bool:
        if owner.kind is not ScopeKind.FUNCTION:
            return False
        names = self._parameter_names.get(owner.key)
        if names is None:
            function = self.functions.get(owner.key)
            names = self._parameter_names[owner.key] = frozenset(function.parameters if function else ())
        return name in names

    def _probed(self, node: cst.BaseExpression) -> None:
        """`node` is read only for its type, shape or identity here."""
        for collector in self.collectors:
            collector.probed(node)

    def _staged_here(self) -> Value:
        """What the result of an array operation at this point depends on (see `BRANCH`)."""
        return self._env.get(BRANCH) or Value(frozenset({StagedDep(self.function_key)}))

    def _branch_guard(self) -> Guard:
        """The guards every path to this point holds (see `BRANCH`)."""
        paths = [dep for dep in self._staged_here().deps if isinstance(dep, StagedDep)]
        if not paths:
            return Guard(frozenset(), frozenset(), frozenset())
        return Guard(frozenset.intersection(*(dep.unless for dep in paths)),
                     frozenset.intersection(*(dep.absent for dep in paths)),
                     frozenset.intersection(*(dep.truthy for dep in paths)))
