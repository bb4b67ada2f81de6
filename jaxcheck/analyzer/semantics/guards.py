"""Guards: what a branch or call proves concrete, and the values that then exist only where it holds.

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`. `isinstance(x, int)`, `x is None`
(a tracer is never None) and `isinstance(x, jax.core.Tracer)` followed by `raise` prove `x` concrete in a
branch; so does a call to a helper that raises at once on a tracer; `if flag:` (and `flag and ...`) proves
`flag` true. When `x` still holds a parameter, every value of the branch is *guarded*
(:attr:`ParamDep.unless`, :attr:`ParamDep.absent` for `is None`, :attr:`ParamDep.truthy` for `if flag:`):
the solve then leaves out the calls that certainly pass a tracer (a value, a false value) there: they
never reach it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.budget import STEPS
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import Scope, ScopeKind, qualified_name
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.syntax import bound_names, dotted, last_statement, is_docstring
from jaxcheck.analyzer.semantics.values import UNKNOWN, CallDep, Dep, Deps, OpaqueDep, ParamDep, StagedDep, Value
from jaxcheck.analyzer.tree import descendants


class Narrowed(NamedTuple):
    """A name a test proves concrete in one branch; `none` when it proves it None (`x is None`); `truthy`
    when it only proves it true (`if flag:`), which guards the branch without making the name concrete
    (a tracer's truth value fails where it is staged, and grad's tracers stay tracers)."""

    name: str
    none: bool = False
    truthy: bool = False


class Guard(NamedTuple):
    """The parameters a branch needs concrete, None, and true (see :class:`ParamDep`)."""

    unless: frozenset[str]
    absent: frozenset[str]
    truthy: frozenset[str]


Narrowing = tuple[set[Narrowed], set[Narrowed]]
"""What a test proves when it is true, and when it is false."""


class GuardReader:
    """Reads guards while the one traversal runs, and applies them to the current environment."""

    scope: Scope
    records: ModuleRecords
    functions: dict[str, FunctionSummary]
    _narrowings: dict[int, Narrowing]
    _guardings: dict[tuple[str, Guard], Guarding]
    _rejects_tracers: dict[str, frozenset[str]]
    _conditional: int
    _concrete_after_statement: set[Narrowed]
    _function_bodies: dict[str, cst.FunctionDef]
    _predicates: dict[str, tuple[str, cst.BaseExpression]]
    """Functions of this module of one parameter whose body returns one expression (`def _is_traced(v):
    return isinstance(v, jax.core.Tracer)`), by key, with that parameter and expression: calling one
    narrows its argument as the expression narrows the parameter."""
    _rebound: dict[str, frozenset[str]]

    def _isinstance_narrowing(self, test: cst.BaseExpression) -> Narrowing:
        """Names proven concrete (not tracers) when `test` is true, and when it is false:
        `isinstance(x, int)` proves `x` concrete when true, `isinstance(x, jax.core.Tracer)` when false.
        Memoized per node: `and` chains ask about every prefix."""
        cached = self._narrowings.get(id(test))
        if cached is None:
            cached = self._narrowings[id(test)] = self._compute_narrowing(test)
        return cached

    def _compute_narrowing(self, test: cst.BaseExpression) -> Narrowing:
        predicate = self._predicates.get(self.records.call_names.get(id(test)) or "") if isinstance(test, cst.Call) else None
        if predicate is not None:  # `_is_traced(x)` with `def _is_traced(v): return isinstance(v, Tracer)`
            assert isinstance(test, cst.Call)
            argument = test.args[0].value if len(test.args) == 1 and test.args[0].keyword is None else None
            if not isinstance(argument, cst.Name) or test.args[0].star:
                return set(), set()
            parameter, expression = predicate
            when_true, when_false = self._isinstance_narrowing(expression)
            return ({found._replace(name=argument.value) for found in when_true if found.name == parameter},
                    {found._replace(name=argument.value) for found in when_false if found.name == parameter})
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            when_true, when_false = self._isinstance_narrowing(test.expression)
            return when_false, when_true
        if isinstance(test, cst.Name):
            return {Narrowed(test.value, truthy=True)}, set()
        if isinstance(test, cst.BooleanOperation):
            left_true, left_false = self._isinstance_narrowing(test.left)
            right_true, right_false = self._isinstance_narrowing(test.right)
            if isinstance(test.operator, cst.And):
                return left_true | right_true, set()
            return set(), left_false | right_false
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
            comparison = test.comparisons[0]  # `x is None`: a tracer is never None
            if isinstance(comparison.comparator, cst.Name) and comparison.comparator.value == "None":
                if isinstance(comparison.operator, cst.Is):
                    return {Narrowed(test.left.value, none=True)}, set()
                if isinstance(comparison.operator, cst.IsNot):
                    return set(), {Narrowed(test.left.value, none=True)}
            return set(), set()
        if not (isinstance(test, cst.Call) and self.records.call_names.get(id(test)) == "builtins.isinstance"):
            return set(), set()
        if len(test.args) != 2 or not isinstance(test.args[0].value, cst.Name):
            return set(), set()
        types = test.args[1].value
        members = [e.value for e in types.elements] if isinstance(types, cst.Tuple) else [types]
        names = [qualified_name(self.scope, member) for member in members]
        if None in names:
            return set(), set()
        subject = {Narrowed(test.args[0].value.value)}
        if all(name in jax_api.TRACER_TYPES for name in names):
            return set(), subject
        if not any(name in jax_api.TRACER_TYPES for name in names):
            return subject, set()
        return set(), set()

    def _assume_narrowed(self, narrowed: set[Narrowed]) -> None:
        """Mark the `narrowed` names as concrete in the current branch (shadowing any enclosing
        comprehension value), except those only proven true.

        A name that still holds a parameter of the current function guards the branch: every value of
        the function's environment now exists only in calls where that parameter is not a tracer
        (:attr:`ParamDep.unless`), for `x is None` is None (:attr:`ParamDep.absent`), for `if flag:` is
        true (:attr:`ParamDep.truthy`); a call that certainly passes a tracer (a value, a false value)
        there never reaches it."""
        function = self.scope.function_scope()
        unless: set[str] = set()
        absent: set[str] = set()
        truthy: set[str] = set()
        for item in narrowed:
            if function.kind is not ScopeKind.FUNCTION or not self.holds_parameter(item.name, function.key):
                continue
            if item.none:
                absent.add(item.name)
            elif not item.truthy:
                unless.add(item.name)
            elif not self._rebinds(function.key, item.name):  # `level = level + 1` keeps the dependency, not the truth
                truthy.add(item.name)
        for item in narrowed:
            if not item.truthy:
                self.scope.env[item.name] = UNKNOWN
        if unless or absent or truthy:
            guard = Guard(frozenset(unless), frozenset(absent), frozenset(truthy))
            guarding = self._guardings.get((function.key, guard))
            if guarding is None:
                guarding = self._guardings[(function.key, guard)] = Guarding(function.key, guard)
            for env in {id(scope.env): scope.env for scope in (self.scope, function)}.values():
                for name, value in env.items():
                    env[name] = guarding.value(value)

    def _eager_alternatives(self, node: cst.If) -> Narrowing:
        """`if EAGER: <Python control flow on pred> else: lax.cond(pred, ...)`: when a concrete test chooses
        between two alternatives and one hands names to lax control flow, the other is the path its author
        wrote for when they are concrete (numpyro's `control_flow_prims_disabled`). Returns the names
        concrete in the body, and in the `else` branch."""
        if node.orelse is None or isinstance(node.orelse, cst.If):
            return set(), set()
        if self.records.values.get(id(node.test), UNKNOWN).deps:
            return set(), set()
        # A test on the operands themselves (`if x.ndim == 0:`) dispatches on their shape, not on a mode.
        tested = {Narrowed(name.value) for name in _names_in(node.test)}
        return self._lax_operands(node.orelse.body) - tested, self._lax_operands(node.body) - tested

    def _lax_operands(self, suite: cst.BaseSuite) -> set[Narrowed]:
        """The names passed as arguments to lax control flow (`lax.cond`, `while_loop`, ...) in `suite`,
        outside nested functions."""
        found: set[Narrowed] = set()
        for node in descendants(suite, outside=(cst.FunctionDef, cst.Lambda)):
            if isinstance(node, cst.Call) and qualified_name(self.scope, node.func) in jax_api.LAX_BODIES:
                found.update(Narrowed(arg.value.value) for arg in node.args if isinstance(arg.value, cst.Name))
        return found

    def _rebinds(self, function: str, name: str) -> bool:
        """Whether the body of `function` may bind `name` again (anywhere, nested functions included);
        True for a lambda, whose body is not kept."""
        node = self._function_bodies.get(function)
        if node is None:
            return True
        if function not in self._rebound:
            self._rebound[function] = frozenset(bound_names(node.body))
        return name in self._rebound[function]

    def holds_parameter(self, name: str, function_key: str) -> bool:
        """Whether `name` still holds the current function's parameter of that name."""
        deps = self.scope.load(name).deps
        if len(deps) != 1:
            return False
        (dep,) = deps
        return isinstance(dep, ParamDep) and dep.function == function_key and dep.name == name

    def _tracer_rejecting_params(self, node: cst.FunctionDef) -> frozenset[str]:
        """The parameters whose tracer makes `node` raise at once: after its docstring, its body opens
        with guards `if isinstance(p, jax.core.Tracer): raise ...`."""
        rejected: set[str] = set()
        statements = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for index, statement in enumerate(statements):
            if index == 0 and is_docstring(statement):
                continue
            if not (isinstance(statement, cst.If) and statement.orelse is None and isinstance(last_statement(statement.body), cst.Raise)):
                break
            test = statement.test
            if not (isinstance(test, cst.Call) and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)):
                break
            if qualified_name(self.scope, test.func) != "builtins.isinstance":
                break
            if qualified_name(self.scope, test.args[1].value) not in jax_api.TRACER_TYPES:
                break
            rejected.add(test.args[0].value.value)
        return frozenset(rejected) & frozenset(self.functions[self.records.function_keys[id(node)]].parameters)

    def _note_tracer_rejection(self, call_args: Sequence[cst.Arg], callee: str, bound: int) -> None:
        """A call, evaluated whenever its statement runs, that passes one of the current function's
        parameters to a parameter `callee` rejects tracers for: the rest of the block runs only where
        that parameter is concrete (applied when the statement ends)."""
        rejected = self._rejects_tracers.get(callee)
        current = self.scope.function_scope()
        if not rejected or self._conditional or current.kind is not ScopeKind.FUNCTION:
            return
        function = self.functions[callee]
        for position, arg in enumerate(call_args):
            if arg.star:
                return
            name = function.parameter_for(None if arg.keyword else position, arg.keyword.value if arg.keyword else None, bound)
            if name in rejected and isinstance(arg.value, cst.Name):
                if self.holds_parameter(arg.value.value, current.key):
                    self._concrete_after_statement.add(Narrowed(arg.value.value))

    def _end_statement(self) -> None:
        """Apply what the statement just evaluated proved concrete (see :meth:`_note_tracer_rejection`)."""
        if self._concrete_after_statement:
            names, self._concrete_after_statement = self._concrete_after_statement, set()
            self._assume_narrowed(names)


class Guarding:
    """Adds one guard to `function`'s dependencies, in values and in the calls and opaque results they
    hold. Memoised per dependency, for the whole file: a DAG that threads values through helpers is
    rewritten once per node, never unfolded into a tree, and a later branch with the same guard
    (`if debug:` after every step) rewrites only the nodes made since. The work is linear in the
    distinct nodes times the distinct guards of a function."""

    def __init__(self, function: str, guard: Guard) -> None:
        self.function = function
        self.guard = guard
        self._done: dict[Dep, Dep] = {}
        self._sets: dict[Deps, Deps] = {}

    def value(self, value: Value) -> Value:
        """`value` as it exists in a branch that runs only where the guard holds."""
        if not value.deps and value.elements is None and value.fields is None:
            return value
        elements = None if value.elements is None else tuple(self.value(e) for e in value.elements)
        fields = None if value.fields is None else tuple((k, self.value(v)) for k, v in value.fields)
        return replace(value, deps=self.deps(value.deps), elements=elements, fields=fields)

    def deps(self, deps: Deps) -> Deps:
        """`deps` with the guard added to the function's parameters, also where they are passed to a call."""
        done = self._sets.get(deps)
        if done is None:
            done = self._sets[deps] = frozenset(map(self.dep, deps))
        return done

    def dep(self, dep: Dep) -> Dep:
        """One dependency with the guard added (memoised: a pure function of the node)."""
        done = self._done.get(dep)
        if done is None:
            done = self._done[dep] = self._rewrite(dep)
        return done

    def _rewrite(self, dep: Dep) -> Dep:
        STEPS.spend()
        unless, absent, truthy = self.guard
        if isinstance(dep, (ParamDep, StagedDep)) and dep.function == self.function:
            return replace(dep, unless=dep.unless | unless, absent=dep.absent | absent, truthy=dep.truthy | truthy)
        if isinstance(dep, CallDep) and dep.caller == self.function:
            arguments = dep.arguments
            positional = tuple(map(self.deps, arguments.positional))
            keywords = tuple((k, self.deps(d)) for k, d in arguments.keywords)
            return replace(dep, arguments=replace(arguments, positional=positional, keywords=keywords),
                           unless=dep.unless | unless, absent=dep.absent | absent, truthy=dep.truthy | truthy)
        if isinstance(dep, OpaqueDep):
            return OpaqueDep(self.deps(dep.inputs))
        return dep


def empty_slots(test: cst.BaseExpression, lookups: Mapping[str, KeyTest]) -> tuple[list[Slot], list[Slot]]:
    """The cache slots a test proves empty when it is true and when it is false: `k not in table` (and
    `k in table`, negated by `not`), `x is None` for a name or attribute path `x` (and `x is not None`),
    `not hasattr(o, "a")`; for `f is None` where `lookups` says `f = table.get(k)`, the key `k` of that
    table too."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        when_true, when_false = empty_slots(test.expression, lookups)
        return when_false, when_true
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "hasattr":
        owner, name = (test.args[0].value, test.args[1].value) if len(test.args) == 2 else (None, None)
        if owner is not None and dotted(owner) and isinstance(name, cst.SimpleString) and \
                isinstance(attribute := name.evaluated_value, str):
            return [], [SlotTest(f"{dotted(owner)}.{attribute}")]
        return [], []
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return [], []
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(right, cst.Name) and right.value == "None" and isinstance(operator, (cst.Is, cst.IsNot)) \
            and (path := dotted(test.left)):
        slots: list[Slot] = [SlotTest(path)]
        if isinstance(test.left, cst.Name) and test.left.value in lookups:
            slots.append(lookups[test.left.value])
        return (slots, []) if isinstance(operator, cst.Is) else ([], slots)
    if isinstance(right, cst.Call) and isinstance(right.func, cst.Attribute) and right.func.attr.value == "keys":
        right = right.func.value if not right.args else right  # `k not in table.keys()`
    if dotted(right):
        pair = KeyTest(test.left, right)
        if isinstance(operator, cst.NotIn):
            return [pair], []
        if isinstance(operator, cst.In):
            return [], [pair]
    return [], []


def lookup_of(value: cst.BaseExpression) -> KeyTest | None:
    """`table.get(k)` (or `table.get(k, None)`): the key and table it looks up, for `f = table.get(k)`."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get"):
        return None
    arguments = value.args
    if not arguments or arguments[0].keyword or arguments[0].star or not dotted(value.func.value):
        return None
    if len(arguments) == 2 and not (isinstance(arguments[1].value, cst.Name) and arguments[1].value.value == "None"):
        return None
    return KeyTest(arguments[0].value, value.func.value) if len(arguments) <= 2 else None


class KeyTest(NamedTuple):
    """`key in table` for a table named by a name or an attribute path."""

    key: cst.BaseExpression
    table: cst.BaseExpression

    def covers(self, store: cst.BaseExpression) -> bool:
        """Whether `store` (`table[key] = v`) writes this key of this table."""
        if not isinstance(store, cst.Subscript) or dotted(store.value) != dotted(self.table):
            return False
        indices = [element.slice for element in store.slice]
        if not all(isinstance(index, cst.Index) for index in indices):
            return False
        values = [_bare(index.value) for index in indices if isinstance(index, cst.Index)]
        key = _bare(self.key)
        if len(values) > 1:  # `table[n, m]` stores the key `(n, m)`
            parts = [_bare(element.value) for element in key.elements] if isinstance(key, cst.Tuple) else []
            return len(parts) == len(values) and all(a.deep_equals(b) for a, b in zip(parts, values))
        return len(values) == 1 and values[0].deep_equals(key)


class SlotTest(NamedTuple):
    """`x is None` for a name or attribute path `x` (`path`, dotted)."""

    path: str

    def covers(self, store: cst.BaseExpression) -> bool:
        """Whether `store` (`x = v`, `self.x = v`) writes this slot."""
        return dotted(store) == self.path


Slot = KeyTest | SlotTest
"""A place a cache keeps a value in, which a test can prove empty."""


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node` without its own parentheses (`(n, m)` and `n, m` are the same key)."""
    return node.with_changes(lpar=[], rpar=[]) if node.lpar or node.rpar else node


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    """Every name read in `node` (not the attribute names of `x.ndim`, not keyword names)."""
    return [name for name in descendants(node) if isinstance(name, cst.Name)]
