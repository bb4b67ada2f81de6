"""PRNG key linearity (JAX401): a flow-sensitive pass over the statements of one function.

The pass runs on the model's flow driver (:mod:`.control_flow`: branches join, loops run to a bounded
fixpoint or once over a one-element display, `return`/`raise`/`break`/`continue` end their path), and
the last statement of a test's `with pytest.raises(...)` block raises, with a state that maps each name
known to hold a key to the consumption sites of that key on some path reaching the current point. A
consumption of a key that is already consumed on some path is a reuse. Names hold keys when they are bound from
`jax.random.key`/`PRNGKey`/`split`/`fold_in`/`wrap_key_data`/`clone` (or an item of one), when they
are passed as the key to a `jax.random` call anywhere in the function, or when they are parameters
named `key`, `rng`, `*_key` or `prng*`; a name also used as a subscript index (`table[key]`) is not a
key. A constant item of a key array (`keys[2]`), a string-keyed item of a table drawn from that way
(`rngs["noise"]`) and an attribute drawn from (`self.rng`) are keys of their own, until the table or object
may change (a store to it, its name rebound, or the object handed to a call: `self.step()`, `refresh(rngs)`).
Calls are identified by qualified name only, through `call_name`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Optional

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.budget import STEPS
from jaxcheck.analyzer.semantics.control_flow import ControlFlow
from jaxcheck.analyzer.semantics.syntax import bound_names, chain_root, dotted, target_names
from jaxcheck.analyzer.tree import child_nodes, scan

CallName = Callable[[cst.Call], Optional[str]]
IgnoresArgument = Callable[[cst.Call, Optional[int], Optional[str]], bool]
"""Whether a call's callee only probes the argument at this position (or keyword): nothing is drawn."""
ReceivesKey = Callable[[cst.Call, Optional[int], Optional[str]], bool]
"""Whether a call's callee draws from the argument at this position (or keyword): a project function
that hands that parameter to `jax.random`, or a library callable's `key=`. The argument is then a key."""
ReuseKind = Literal["again", "loop", "reseeded", "per_item", "per_call", "captured", "carried", "returned", "default"]
CarryShape = Literal["all", "first"]
"""What a lax loop body returns as its carry: all of it (`fori_loop`, `while_loop`) or the first element
of the returned pair (`scan`)."""


@dataclass(frozen=True, slots=True)
class KeyReuse:
    """`node` consumes key `key` that `first` already consumed on some path. `kind` is "again" (two
    consumptions), "loop" (the same site on the next iteration of a loop that never re-splits the key)
    or "reseeded" (the key is re-created from the same seed in each iteration; `first` is the call
    that creates it), or "per_item" (in a function run once per example or loop step, a key created from
    a seed that is the same every time is drawn from; `first` is the creating call), "per_call" (the
    same in a compiled function called repeatedly: each call draws the same bits), "captured" (such a
    function draws from a key it does not bind; `first` is the same call), "carried" (a lax loop body
    returns in its carry a key it consumed, unchanged: the next step draws the same bits; `first` is the
    return statement), "returned" (the same for a traced function returning a key it received and
    consumed: its caller gets back a key whose bits are spent) or "default" (a parameter's default key,
    made once from a fixed seed, drawn from in calls run many times; `first` is the default)."""

    node: cst.Call
    key: str
    first: cst.CSTNode
    kind: ReuseKind


@dataclass(frozen=True, slots=True)
class _Key:
    """A key on the paths reaching a point: where it was consumed (ids, first first) and, for a key
    created from a loop-invariant seed inside a loop, the id of the creating call."""

    sites: tuple[int, ...] = ()
    origin: int | None = None

    def joined(self, other: _Key) -> _Key:
        sites = self.sites + tuple(s for s in other.sites if s not in self.sites)
        return _Key(sites, self.origin if self.origin == other.origin else None)


State = Optional[dict[str, _Key]]
"""Keys by name; None for an unreachable point (after `return`, `raise`, `break`, `continue`)."""

_FRESH = _Key()


def _joined(*states: State) -> State:
    """The state where paths that left `states` meet (None: no path reaches it)."""
    result: State = None
    for state in states:
        if state is None:
            continue
        STEPS.spend(len(state))
        if result is None:
            result = dict(state)
            continue
        for name, key in state.items():
            current = result.get(name)
            result[name] = key if current is None else current.joined(key)
    return result


def is_key_like_name(name: str) -> bool:
    """Parameter names that conventionally hold PRNG keys."""
    return name in ("key", "rng") or name.endswith("_key") or name.startswith("prng")


class _Evidence:
    """Names passed as the key of a `jax.random` call, names whose string-keyed items are (`rngs["noise"]`:
    tables of keys), attribute paths that are (`self.rng`), and names used as subscript indices, in one
    function body (nested functions and classes excluded)."""

    def __init__(self, call_name: CallName, receives_key: ReceivesKey | None) -> None:
        self.call_name = call_name
        self.receives_key = receives_key
        self.keys: set[str] = set()
        self.tables: set[str] = set()
        self.attributes: set[str] = set()
        self.indices: set[str] = set()
        self._name_reads: Counter[str] = Counter()
        """Per name, how often it appears other than as a plain assignment target or as the table of an item
        read (`rngs["noise"]`): a table that appears so may be changed through an alias (`{"model": rngs}`)."""

    def escaped_tables(self) -> set[str]:
        """The tables of keys the body also uses whole (hands on, iterates, stores elsewhere)."""
        return {table for table in self.tables if self._name_reads[table]}

    def visit_Name(self, node: cst.Name) -> None:
        self._name_reads[node.value] += 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self._name_reads[node.target.value] -= 1  # `rngs = make_rngs(key)` binds it: no use

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        name = self.call_name(node)
        if name in _TABLE_READERS:  # `len(rngs)`, `print(list(rngs))`: a look, no change
            for arg in node.args:
                if isinstance(arg.value, cst.Name):
                    self._name_reads[arg.value.value] -= 1
        if jax_api.is_random_call(name) and name not in jax_api.KEYLESS_RANDOM:
            argument = _key_argument(node)
            if isinstance(argument, cst.Name):
                self.keys.add(argument.value)
            elif (table := _string_item(argument)) is not None:
                self.tables.add(table[0])
            elif isinstance(argument, cst.Attribute) and isinstance(chain_root(argument), cst.Name):
                self.attributes.add(dotted(argument))
        elif self.receives_key is not None:  # `init(k, 3)` with `def init(key, n): ... normal(key, ...)`
            position = 0
            for arg in node.args:
                if arg.star:
                    break
                index = None if arg.keyword is not None else position
                position += arg.keyword is None
                name = arg.value.value if isinstance(arg.value, cst.Name) else None
                if name not in (None, "True", "False", "None") and self.receives_key(
                    node, index, arg.keyword.value if arg.keyword else None
                ):
                    self.keys.add(name)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if isinstance(node.value, cst.Name) and _string_item(node) is not None:
            self._name_reads[node.value.value] -= 1  # `rngs["noise"]`: an item read

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for operand in (node.left, *(comparison.comparator for comparison in node.comparisons)):
            if isinstance(operand, cst.Name):
                self._name_reads[operand.value] -= 1  # `"noise" not in rngs`: a look, no change

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in _TABLE_VIEWS:
            self._name_reads[node.value.value] -= 1  # `rngs.keys()`: a look, no change

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        if isinstance(node.slice, cst.Index) and isinstance(node.slice.value, cst.Name):
            self.indices.add(node.slice.value.value)


def find_key_reuses(body: Sequence[cst.CSTNode], parameters: Iterable[str], call_name: CallName,
                    ignores_argument: IgnoresArgument, per_item: bool = False, item_root: bool = False,
                    per_call: bool = False,
                    carry: CarryShape | None = None, receives_key: ReceivesKey | None = None,
                    fresh_attributes: frozenset[str] = frozenset(), returns_to_caller: bool = False,
                    shared_defaults: Mapping[str, cst.Call] | None = None) -> list[KeyReuse]:
    """The key reuses in a function body (or module) `body` whose parameters are `parameters`; with
    `per_item` (the function runs once per example of a `vmap` or per step of a `lax` loop), a key seeded
    with what no run changes (literals, names the function does not bind) is shared by all of them; so it
    is with `per_call` (the function's compiled program runs on each of repeated calls). With
    `item_root` (the function is itself the one vmapped or looped), so is a key it captures from outside;
    with `carry` (it is a lax loop body), a consumed key returned in the carry is drawn again next step;
    with `returns_to_caller` (it is traced), a consumed key it returns is drawn again by its caller;
    `shared_defaults` are key parameters whose default, one key made from a fixed seed, calls run many
    times leave in place: drawing from one draws the same bits on each of those calls.
    Keys are the key-like parameters and the names the body draws from or hands to a drawing callee
    (`receives_key`); `fresh_attributes` (`self.rng` of a `@property`) give a new value on each read."""
    evidence = _Evidence(call_name, receives_key)
    for statement in body:
        scan(statement, evidence)
    parameters = tuple(parameters)
    candidates = evidence.keys | {name for name in parameters if is_key_like_name(name)}
    keys = frozenset(candidates - evidence.indices)
    analysis = _Analysis(call_name, ignores_argument, keys, evidence.indices)
    analysis.tables = frozenset(evidence.tables - keys - evidence.escaped_tables())
    analysis.attributes = frozenset(evidence.attributes - fresh_attributes)
    analysis.local_names = frozenset(parameters).union(*(_assigned_names(statement) for statement in body))
    if per_item or per_call:
        bound = set(parameters).union(*(_assigned_names(statement) for statement in body))
        analysis.batch_bound = frozenset(bound)
        analysis.captures_shared = item_root
    analysis.carry = carry
    analysis.returns_to_caller = returns_to_caller
    analysis.per_call = per_call and not per_item
    entry = {name: _FRESH for name in keys}
    for name, default in (shared_defaults or {}).items():
        if name in entry:
            analysis.nodes[id(default)] = default
            analysis.default_origins.add(id(default))
            entry[name] = _Key(origin=id(default))
    return analysis.walk(body, entry)


class _Analysis(ControlFlow[State]):
    """The walk of one body: the keys on the current path (`state`) and the reuses found."""

    def __init__(self, call_name: CallName, ignores_argument: IgnoresArgument, keys: frozenset[str],
                 not_keys: set[str]) -> None:
        self.state: State = None
        self._loop_frames = []
        self.call_name = call_name
        self.ignores_argument = ignores_argument
        self.keys = keys
        self.not_keys = not_keys
        self.nodes: dict[int, cst.CSTNode] = {}
        self.origins: dict[int, int] = {}  # creating call -> first consumption of a key it made
        self._assigned: dict[int, frozenset[str]] = {}
        """The names each loop assigns, by the loop node's id (scanned once, not once per pass)."""
        self.batch_bound: frozenset[str] | None = None
        """In a function run once per example or loop step: the names it binds (a seed built from others
        is the same on every run)."""
        self.batch_origins: set[int] = set()
        self.default_origins: set[int] = set()
        """Fixed-seed keys a parameter's default holds, shared by every call that leaves it in place."""
        self.per_call = False
        """Keys made from seeds no run changes are shared by repeated calls, not by examples of a batch."""
        self.captures_shared = False
        self.indexed_draws: set[int] = set()
        """Draws whose result each run indexes by a value of its own (`split(key, n)[i]`)."""
        """The function is itself run once per example or step: keys it does not bind are shared."""
        self.carry: CarryShape | None = None
        self.returns_to_caller = False
        self.tables: frozenset[str] = frozenset()
        """Names whose string-keyed items are keys (`rngs["noise"]`), each item tracked on its own."""
        self.attributes: frozenset[str] = frozenset()
        self.local_names: frozenset[str] = frozenset()
        """The function's parameters and the names it binds: an object only they hold changes only where
        the function hands it on (any call may change a global one)."""
        """Attribute paths that hold keys (`self.rng`), tracked until the object may change: a store to the
        path, the root name rebound, or the root object handed to a call (`self.step()`, `f(state)`)."""
        self.made_here: set[str] = set()
        """Names bound to a key made in this body (`key, sub = split(key)`): not the key it received."""
        self.reports: dict[tuple[int, str], KeyReuse] = {}
        self.partials: dict[str, tuple[str, ...]] = {}
        self.named_partials: set[int] = set()
        """`partial(...)` calls bound to a name; any other partial (passed on) may be called at once."""
        """Names bound to `functools.partial(f, key, ...)`, with the keys they carry."""

    def walk(self, body: Sequence[cst.CSTNode], entry: dict[str, _Key]) -> list[KeyReuse]:
        """Walk `body` from the keys `entry`; the reuses found."""
        self.state = entry
        self._block(body)
        return list(self.reports.values())

    # ------------------------------------------------------------------------- the driver's state
    def _current(self) -> State:
        return self.state

    def _switch(self, state: State) -> State:
        previous, self.state = self.state, state
        return previous

    def _copy(self, state: State) -> State:
        return None if state is None else dict(state)

    def _join(self, states: Sequence[State]) -> State:
        return _joined(*states)

    def _reachable(self) -> bool:
        return self.state is not None

    def _end_path(self) -> None:
        self.state = None

    def _live(self) -> dict[str, _Key]:
        """The keys on the current path (expressions are only read where a path runs)."""
        assert self.state is not None
        return self.state

    # ---------------------------------------------------------------------------------- statements
    def _statement(self, statement: cst.CSTNode) -> None:
        STEPS.spend()
        super()._statement(statement)

    def _simple_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> None:
        for statement in statements:
            if self.state is None:
                return
            self._small_statement(statement)

    def _small_statement(self, node: cst.BaseSmallStatement) -> None:
        STEPS.spend()
        state = self._live()
        if isinstance(node, cst.Expr):
            self.expr(node.value)
        elif isinstance(node, (cst.Assign, cst.AnnAssign)):
            if node.value is None:
                return
            if isinstance(node.value, cst.Call) and self.call_name(node.value) in jax_api.PARTIAL:
                self.named_partials.add(id(node.value))
            self.expr(node.value)
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self.bind(target, node.value, self._live())
        elif isinstance(node, cst.AugAssign):
            self.expr(node.value)
            self.bind(node.target, None, self._live())
        elif isinstance(node, (cst.Return, cst.Raise)):
            self.children(node)
            if isinstance(node, cst.Return) and node.value is not None and (self.carry or self.returns_to_caller):
                self.returned(node, node.value, self._live())
            self._end_path()
        elif isinstance(node, cst.Break):
            self._break()
        elif isinstance(node, cst.Continue):
            self._continue()
        elif isinstance(node, cst.Del):
            for name in target_names(node.target):
                state.pop(name, None)
        elif isinstance(node, cst.Assert) and isinstance(node.test, cst.Call) \
                and not jax_api.is_random_call(self.call_name(node.test)):
            return  # `assert is_prng_key(key)`: a predicate checks the key, it draws nothing
        elif not isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Pass)):
            self.children(node)

    def _definition(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        self._live().pop(node.name.value, None)

    def _condition(self, statement: cst.If | cst.While, test: cst.BaseExpression) -> None:
        self.expr(test)

    def _subject(self, node: cst.Match) -> None:
        self.expr(node.subject)

    def _iterate_over(self, node: cst.For) -> None:
        self.expr(node.iter)

    def _bind_item(self, node: cst.For) -> None:
        self.bind_iteration(node.target, node.iter, self._live())

    def _enter_context(self, item: cst.WithItem) -> None:
        self.expr(item.item)
        if item.asname is not None:
            self.bind(item.asname.name, None, self._live())

    def _with_body(self, node: cst.With) -> None:
        statements = node.body.body
        if self.expects_raise(node) and statements and not isinstance(statements[-1], cst.BaseCompoundStatement):
            self._block(statements[:-1])  # the last raises: nothing it draws is ever seen
        else:
            self._suite(node.body)

    def expects_raise(self, node: cst.With) -> bool:
        """Whether the block is a test's `with pytest.raises(...)` (or `self.assertRaises(...)`): it ends by
        raising at its last statement, and the exception is swallowed."""
        for item in node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            if self.call_name(call) in jax_api.EXPECTED_RAISES:
                return True
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in jax_api.EXPECTED_RAISE_METHODS:
                return True
        return False

    # --------------------------------------------------------------------------------- expressions
    def children(self, node: cst.CSTNode) -> None:
        for child in child_nodes(node):
            self.expr(child)

    def expr(self, node: cst.CSTNode) -> None:
        """Evaluate `node` in Python's order; consumptions update the current state."""
        STEPS.spend()
        if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(node, cst.IfExp):
            self.expr(node.test)
            entry = self._fork()
            self.expr(node.body)
            taken = self._switch(entry)
            self.expr(node.orelse)
            self.state = _joined(taken, self.state)
            return
        if isinstance(node, cst.BooleanOperation):
            self.expr(node.left)
            entry = self._fork()
            self.expr(node.right)
            self.state = _joined(entry, self.state)
            return
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self.comprehension(node)
            return
        if isinstance(node, cst.NamedExpr):
            self.expr(node.value)
            self.bind(node.target, node.value, self._live())
            return
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call) and self._indexed_per_run(node):
            self.indexed_draws.add(id(node.value))
        self.children(node)
        if isinstance(node, cst.Call):
            self.call(node, self._live())

    def _indexed_per_run(self, node: cst.Subscript) -> bool:
        """`split(key, n)[i]` with `i` bound by this function: every run takes another part of the draw."""
        if self.batch_bound is None:
            return False
        return any(not _invariant(element.slice.value, self.batch_bound)
                   for element in node.slice if isinstance(element.slice, cst.Index))

    def comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        """The first iterable runs once; the rest runs per element, like a loop body."""
        self.expr(node.for_in.iter)
        bound = set(target_names(node.for_in.target))
        state = self._live()
        saved = {name: state[name] for name in bound if name in state}

        def iteration() -> None:
            clause: cst.CompFor | None = node.for_in
            first = True
            while clause is not None:
                if not first:
                    self.expr(clause.iter)
                    bound.update(target_names(clause.target))
                self.bind_iteration(clause.target, clause.iter, self._live())
                for condition in clause.ifs:
                    self.expr(condition.test)
                clause, first = clause.inner_for_in, False
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                self.expr(node.value)
            else:
                self.expr(node.elt)

        self._loop(node, iteration)
        head = self._live()
        for name in bound:
            head.pop(name, None)
        head.update(saved)

    def call(self, node: cst.Call, state: dict[str, _Key]) -> None:
        name = self.call_name(node)
        if self.attributes:  # `self.step()`, `refresh(state)` may store new keys in the object
            receiver = [chain_root(node.func)] if isinstance(node.func, cst.Attribute) else []
            for held in (*receiver, *(arg.value for arg in node.args)):
                if isinstance(held, cst.Name):
                    _forget_items(held.value, state)
            if name is None or not name.startswith(jax_api.PURE_CALL_PREFIXES):  # `advance()` may change a global object
                for item in [k for k in state if _root_name(k) != k and _root_name(k) not in self.local_names]:
                    del state[item]
        if isinstance(node.func, cst.Name) and node.func.value in self.partials:
            for bound in self.partials[node.func.value]:  # calling `partial(f, key)` consumes `key`
                if bound in state:
                    self.consume(bound, node, state)
        if name in jax_api.PARTIAL and id(node) in self.named_partials:
            return  # `draw = partial(f, key)`: the key is consumed where `draw` is called
        if abstractly_evaluated(node, self.call_name):
            return
        if jax_api.is_random_call(name):
            if name not in jax_api.NON_CONSUMING_RANDOM:
                key = self.key_name(_key_argument(node), state)
                if key is not None:
                    self.consume(key, node, state)
            return
        if not jax_api.consumes_key_argument(name) or name is None and _stores_arguments(node):
            return
        for arg in node.args:  # a partial carrying keys, passed on: the callee may call it
            if isinstance(arg.value, cst.Name):
                for bound in self.partials.get(arg.value.value, ()):
                    if bound in state:
                        self.consume(bound, node, state)
        position = 0
        for arg in node.args:
            index = position if arg.keyword is None else None
            position += arg.keyword is None and not arg.star
            if arg.star or not isinstance(arg.value, cst.Name) or arg.value.value not in state:
                continue
            if not self.ignores_argument(node, index, arg.keyword.value if arg.keyword else None):
                self.consume(arg.value.value, node, state)

    def key_name(self, argument: cst.BaseExpression | None, state: dict[str, _Key]) -> str | None:
        """The tracked key an argument names: a key variable, one constant item of a key array or table
        (`keys[2]`, `rngs["noise"]`, each tracked on its own), or an attribute holding a key (`self.rng`)."""
        if isinstance(argument, cst.Name):
            return argument.value if argument.value in state else None
        if isinstance(argument, cst.Attribute) and (path := dotted(argument)) in self.attributes:
            state.setdefault(path, _FRESH)
            return path
        if (table := _string_item(argument)) is not None:
            if table[0] not in self.tables:
                return None
            item = f"{table[0]}[{table[1]!r}]"
            state.setdefault(item, _FRESH)
            return item
        if not (isinstance(argument, cst.Subscript) and isinstance(argument.value, cst.Name) and len(argument.slice) == 1):
            return None
        index = argument.slice[0].slice
        array = argument.value.value
        if array not in state or not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
            return None
        item = f"{array}[{int(index.value.value, 0)}]"
        state.setdefault(item, _FRESH)
        return item

    def consume(self, name: str, site: cst.Call, state: dict[str, _Key]) -> None:
        key = state[name]
        self.nodes[id(site)] = site
        if key.sites:
            first = self.nodes[key.sites[0]]
            self._report(KeyReuse(site, name, first, "loop" if first is site else "again"))
        elif key.origin is not None and key.origin in self.origins:
            self._report(KeyReuse(site, name, self.nodes[key.origin], "reseeded"))
        elif key.origin in self.batch_origins:
            self._report(KeyReuse(site, name, self.nodes[key.origin], "per_call" if self.per_call else "per_item"))
        elif key.origin in self.default_origins:
            self._report(KeyReuse(site, name, self.nodes[key.origin], "default"))
        elif (self.captures_shared and self.batch_bound is not None and _root_name(name) not in self.batch_bound
              and id(site) not in self.indexed_draws):
            self._report(KeyReuse(site, name, site, "captured"))
        if key.origin is not None:
            self.origins.setdefault(key.origin, id(site))
        state[name] = _Key(key.sites or (id(site),), key.origin)

    def returned(self, node: cst.Return, value: cst.BaseExpression, state: dict[str, _Key]) -> None:
        """A lax loop body (or a traced function) returns `value`: a key it received and consumed, returned
        in its carry, comes back unchanged next step (to its caller); a key made here, `key, sub =
        split(key)`, does not."""
        kind: ReuseKind = "carried" if self.carry else "returned"
        if self.carry == "first":
            if not (isinstance(value, cst.Tuple) and value.elements):
                return
            value = value.elements[0].value
        for name in _carried_names(value):
            key = state.get(name)
            if key is not None and key.sites and not self._repeating() and name not in self.made_here:
                site = self.nodes[key.sites[0]]
                if isinstance(site, cst.Call):
                    self._report(KeyReuse(site, name, node, kind))

    def _repeating(self) -> cst.CSTNode | None:
        """The innermost loop being walked that repeats its body."""
        return next((frame.node for frame in reversed(self._loop_frames) if frame.repeats), None)

    def _assigned_in(self, loop: cst.CSTNode) -> frozenset[str]:
        """The names `loop` (re)binds anywhere, its target included (scanned once, not once per pass)."""
        assigned = self._assigned.get(id(loop))
        if assigned is None:
            assigned = self._assigned[id(loop)] = frozenset(_assigned_names(loop))
        return assigned

    def _report(self, reuse: KeyReuse) -> None:
        self.reports.setdefault((id(reuse.node), reuse.key), reuse)

    # ------------------------------------------------------------------------------------ binding
    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, state: dict[str, _Key]) -> None:
        """Bind `target` to `value` (None: to something that is not a key as far as we know)."""
        for name in target_names(target):
            _forget_items(name, state)  # the items of the array or table this name held
        for single in _target_parts(target):
            if (table := _string_item(single)) is not None:
                state.pop(f"{table[0]}[{table[1]!r}]", None)  # `rngs["noise"] = new`: a fresh item
            elif isinstance(single, cst.Subscript) and isinstance(single.value, cst.Name):
                _forget_items(single.value.value, state)  # `rngs[name] = new`: any item may be new
            elif isinstance(single, cst.Attribute) and (path := dotted(single)):
                _forget_items(path, state)  # `self.rng = new`: its attributes too
                state.pop(path, None)
        if isinstance(target, cst.Name):
            name = target.value
            self.partials.pop(name, None)
            bound = self.bound_keys(value, state)
            if bound:
                self.partials[name] = bound
            kind = self.key_kind(value, state)
            if kind == "source" or kind == "alias" and isinstance(value, cst.Name) and value.value in self.made_here:
                self.made_here.add(name)
            else:
                self.made_here.discard(name)
            if kind == "source" and name not in self.not_keys:
                state[name] = _Key(origin=self.seeded_origin(value))
            elif kind == "alias" and isinstance(value, cst.Name):
                state[name] = state[value.value]
            elif name in self.keys:
                state[name] = _FRESH
            else:
                state.pop(name, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
                isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)
            ):
                for element, part in zip(elements, value.elements):
                    self.bind(element, part.value, state)
                return
            unpacks_keys = self.key_kind(value, state) is not None
            for name in target_names(target):
                if unpacks_keys:
                    self.made_here.add(name)
                else:
                    self.made_here.discard(name)
                if (unpacks_keys or name in self.keys) and name not in self.not_keys:
                    state[name] = _FRESH
                else:
                    state.pop(name, None)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, value, state)

    def bind_iteration(self, target: cst.BaseExpression, iterable: cst.BaseExpression,
                       state: dict[str, _Key]) -> None:
        """Bind a loop target: the items of a key array are fresh keys (`for k in split(key, n)`);
        `enumerate(keys)` and `zip(keys, xs)` give keys at their positions."""
        if isinstance(iterable, cst.Call) and isinstance(target, (cst.Tuple, cst.List)):
            name = self.call_name(iterable)
            arguments = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if name == "builtins.enumerate" and arguments and len(target.elements) == 2:
                self.bind(target.elements[0].value, None, state)
                self._bind_element(target.elements[1].value, arguments[0], state)
                return
            if name == "builtins.zip" and len(arguments) == len(target.elements):
                for element, argument in zip(target.elements, arguments):
                    self._bind_element(element.value, argument, state)
                return
        self._bind_element(target, iterable, state)

    def _bind_element(self, target: cst.BaseExpression, iterable: cst.BaseExpression, state: dict[str, _Key]) -> None:
        if isinstance(target, cst.Name) and self.key_kind(iterable, state) is not None and target.value not in self.not_keys:
            state[target.value] = _FRESH
        else:
            self.bind(target, None, state)
            for name in target_names(target):
                if name not in self.keys:
                    state.pop(name, None)

    def bound_keys(self, value: cst.BaseExpression | None, state: dict[str, _Key]) -> tuple[str, ...]:
        """The keys bound into `functools.partial(f, key, ...)`."""
        if not (isinstance(value, cst.Call) and self.call_name(value) in jax_api.PARTIAL):
            return ()
        return tuple(a.value.value for a in value.args[1:] if isinstance(a.value, cst.Name) and a.value.value in state)

    def key_kind(self, value: cst.BaseExpression | None, state: dict[str, _Key]) -> str | None:
        """"source" for a new key (or an item of a key array), "alias" for a name holding a key."""
        if isinstance(value, cst.Call) and self.call_name(value) in jax_api.KEY_SOURCES:
            return "source"
        if isinstance(value, cst.Subscript) and self.key_kind(value.value, state) is not None:
            return "source"
        if isinstance(value, cst.Name) and value.value in state:
            return "alias"
        return None

    def seeded_origin(self, value: cst.BaseExpression | None) -> int | None:
        """The id of `jax.random.key(seed)` (or `jax.random.fold_in(key, data)`) inside a loop when its
        arguments are the same in every iteration, or in a function run per example or loop step when
        they are the same on every run."""
        if not isinstance(value, cst.Call) or self.call_name(value) not in jax_api.DERIVED_KEY_SOURCES:
            return None
        loop = self._repeating()
        if loop is None:
            if self.batch_bound is None or not value.args:
                return None
            if all(_invariant(arg.value, self.batch_bound) for arg in value.args):
                self.nodes[id(value)] = value
                self.batch_origins.add(id(value))
                return id(value)
            return None
        assigned = self._assigned_in(loop)
        if value.args and all(_invariant(arg.value, assigned) for arg in value.args):
            self.nodes[id(value)] = value
            return id(value)
        return None


# ------------------------------------------------------------------------------------- helpers
def fixed_seed_key(node: cst.Call, call_name: CallName) -> bool:
    """`jax.random.PRNGKey(0)`, `jax.random.key(SEED)`: a key made from literals and names alone."""
    return call_name(node) in jax_api.SEEDED_KEY_SOURCES and bool(node.args) and \
        all(_invariant(arg.value, frozenset()) for arg in node.args)


def abstractly_evaluated(node: cst.Call, call_name: CallName) -> bool:
    """Whether `node` only traces a function for its shapes, running nothing (a key passed draws
    nothing): `jax.eval_shape(init, key)`, `jax.make_jaxpr(init)(key)`, `jax.jit(init).lower(key)`."""
    func = node.func
    if isinstance(func, cst.Call):
        return call_name(func) in jax_api.ABSTRACT_EVALUATION
    if isinstance(func, cst.Attribute) and func.attr.value in jax_api.STAGING_METHODS and isinstance(func.value, cst.Call):
        return call_name(func.value) in jax_api.CACHING_TRANSFORMS
    return call_name(node) in jax_api.ABSTRACT_EVALUATION


def _stores_arguments(node: cst.Call) -> bool:
    """Whether an unresolved method call returns a copy of its object with fields replaced
    (`state.replace(key=k)`, `carry._replace(key=k)`): it stores the key, draws nothing."""
    return isinstance(node.func, cst.Attribute) and node.func.attr.value in jax_api.STORING_METHODS


def _key_argument(node: cst.Call) -> cst.BaseExpression | None:
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "key":
            return arg.value
    first = node.args[0] if node.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


_TABLE_VIEWS = frozenset({"keys", "values", "items", "get"})
"""Methods of a dict that read it without changing it."""
_TABLE_READERS = frozenset({f"builtins.{name}" for name in ("len", "list", "sorted", "print", "repr", "str", "isinstance")})
"""Builtins that read a dict without changing it."""


def _string_item(node: cst.BaseExpression | None) -> tuple[str, str] | None:
    """`rngs["noise"]`: the name and the string key; None for anything else."""
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1):
        return None
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)):
        return None
    key = index.value.evaluated_value
    return (node.value.value, key) if isinstance(key, str) else None


def _target_parts(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The single targets a store target assigns (`a`, `t["k"]`, the elements of `a, (b, t["k"])`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [part for element in target.elements for part in _target_parts(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_parts(target.value)
    return [target]


def _root_name(key: str) -> str:
    """The variable a tracked key lives in: `keys` of `keys[2]`, `self` of `self.rng`."""
    return key.partition("[")[0].partition(".")[0]


def _forget_items(name: str, state: dict[str, _Key]) -> None:
    """Stop tracking the items and attributes of the array, table or object `name` (rebound, or handed to
    code that may change it)."""
    for item in [k for k in state if k.startswith((f"{name}[", f"{name}."))]:
        del state[item]


def _carried_names(value: cst.BaseExpression) -> list[str]:
    """The plain names a returned carry holds (`key`, `(key, w)`, `[key, (w, b)]`)."""
    if isinstance(value, cst.Name):
        return [value.value]
    if isinstance(value, (cst.Tuple, cst.List)):
        return [name for element in value.elements for name in _carried_names(element.value)]
    return []


def _assigned_names(node: cst.CSTNode) -> set[str]:
    """Names (re)bound anywhere in a loop, its target included (not in nested functions)."""
    return bound_names(node, nested=False)


def _invariant(node: cst.BaseExpression, assigned: frozenset[str]) -> bool:
    """A seed (or key) built from literals and names the loop never rebinds (`0`, `seed`, `cfg.seed + 1`)."""
    if isinstance(node, (cst.Integer, cst.SimpleString)):
        return True
    if isinstance(node, cst.Name):
        return node.value not in assigned
    if isinstance(node, cst.Attribute):
        return _invariant(node.value, assigned)
    if isinstance(node, cst.BinaryOperation):
        return _invariant(node.left, assigned) and _invariant(node.right, assigned)
    if isinstance(node, cst.UnaryOperation):
        return _invariant(node.expression, assigned)
    return False
