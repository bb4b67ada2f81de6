"""The one flow driver: statements, in program order, with branches, loops, `try`, `with`, `match` and exits.

Branches are read on copies of the environment and joined; a loop body is read until its environment
is stable, at most twice (a loop nested deeper than `FIXPOINT_DEPTH` once); narrowing tests
(`isinstance`, `k in table`) and `jax.ensure_compile_time_eval()` blocks change what holds inside.
Cost: one budget step per statement, and one per name joined.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import ChangeKind
from jaxcheck.analyzer.semantics.budget import FIXPOINT_DEPTH
from jaxcheck.analyzer.semantics.expressions import ExpressionInterpreter
from jaxcheck.analyzer.semantics.guards import Slot, empty_slots
from jaxcheck.analyzer.semantics.interpreter import Env
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.scopes import ScopeKind, qualified_name
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.syntax import last_statement, runs_once
from jaxcheck.analyzer.semantics.values import JAX_ARRAY, PYTHON_CONTAINER, UNKNOWN, Value, combine
from jaxcheck.analyzer.tree import child_nodes


class FlowDriver(ExpressionInterpreter):
    """Interprets statements (see the module docstring)."""

    def _record_return(self, value: Value) -> None:
        """Join `value` into the current function's return value (per element for tuple returns)."""
        key = self.function_key
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
                for collector in self.collectors:
                    collector.bound(statement.value, value)
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

    def _for(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.For)
        iterable = self._eval(node.iter)
        element = self._iteration_value(node.iter, iterable)
        if iterable.flags & PYTHON_CONTAINER and not iterable.deps and self._fixed_iterable(node.iter):
            self.records.configuration_loops.add(id(node))
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

    def _fixed_iterable(self, iterable: cst.BaseExpression) -> bool:
        """A literal display (`("dense", "diagonal")`) or a module-level constant (`SIZES`): a fixed list."""
        if isinstance(iterable, (cst.Tuple, cst.List, cst.Set)):
            return True
        if not isinstance(iterable, cst.Name):
            return False
        resolved = self.scope.resolve(iterable.value)
        return resolved is not None and resolved[0].kind is ScopeKind.MODULE and iterable.value.isupper()

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
        key = self.function_key
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


def _always_exits(suite: cst.BaseSuite) -> bool:
    """True when a block ends in `raise` or `return`: code after its `if` runs only when the test was
    false. (`continue`/`break` are not counted: their values still flow around the loop.)"""
    return isinstance(last_statement(suite), (cst.Raise, cst.Return))


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


# The interpreters of statements by node type: class-level, so a builder holds no bound
# methods of its own (they would make it a reference cycle, which only the cyclic collector frees).
_STATEMENT_HANDLERS: dict[type[cst.CSTNode], Callable[[FlowDriver, cst.CSTNode], None]] = {
    cst.SimpleStatementLine: FlowDriver._simple_statement_line,
    cst.FunctionDef: FlowDriver._function_def,
    cst.ClassDef: FlowDriver._class_def,
    cst.If: FlowDriver._if,
    cst.For: FlowDriver._for,
    cst.While: FlowDriver._while,
    cst.Try: FlowDriver._try,
    cst.TryStar: FlowDriver._try,
    cst.With: FlowDriver._with,
    cst.Match: FlowDriver._match,
}
