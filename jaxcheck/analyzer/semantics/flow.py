"""The model's statements: the interpreter's meaning of each simple statement and of each part of a
compound one, on the one flow driver (:mod:`.control_flow`), with the environment of values as its state.

The interpreter reads dead code too (no path ends): every statement gets its facts. Narrowing tests
(`isinstance`, `k in table`, `x is None`) and `jax.ensure_compile_time_eval()` blocks change what holds
inside them. Cost: one budget step per statement, and one per name joined.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import ContextManager

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import ChangeKind
from jaxcheck.analyzer.semantics.control_flow import Alternated, ControlFlow, alternative_of
from jaxcheck.analyzer.semantics.expressions import ExpressionInterpreter
from jaxcheck.analyzer.semantics.guards import Slot, empty_slots
from jaxcheck.analyzer.semantics.interpreter import Env, IfFacts
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.scopes import ScopeKind, qualified_name
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.syntax import last_statement
from jaxcheck.analyzer.semantics.values import JAX_ARRAY, PYTHON_CONTAINER, UNKNOWN, Value, combine
from jaxcheck.analyzer.tree import child_nodes


class FlowDriver(ControlFlow[Env], ExpressionInterpreter):
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

    # ------------------------------------------------------------------------- the driver's state
    def _current(self) -> Env:
        return self._env

    def _switch(self, state: Env) -> Env:
        return self._swap_env(state)

    def _copy(self, state: Env) -> Env:
        return dict(state)

    def _join(self, states: Sequence[Env]) -> Env:
        joined = states[0]
        for other in states[1:]:
            joined = self._merged(joined, other)
        return joined

    # ------------------------------------------------------------------------------------ statements
    def _statement(self, statement: cst.CSTNode) -> None:
        self._budget.spend()
        self._note_branch(statement)
        super()._statement(statement)
        self._end_statement()

    def _suite(self, suite: cst.BaseSuite) -> None:
        known_empty = len(self._empty_slots)
        if isinstance(suite, cst.SimpleStatementSuite):
            self._note_branch(suite)
        super()._suite(suite)
        del self._empty_slots[known_empty:]

    def _definition(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        if isinstance(node, cst.FunctionDef):
            self._function_def(node)
        else:
            self._class_def(node)

    def _note_name_assignment(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression) -> None:
        names = tuple(target.value for target in targets if isinstance(target, cst.Name))
        if names:
            self.records.name_assignments.append((names, value))

    def _simple_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> None:
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

    def _condition(self, statement: cst.If | cst.While, test: cst.BaseExpression) -> None:
        self._eval(test)
        if isinstance(statement, cst.If):
            self._end_statement()

    def _if_facts(self, node: cst.If) -> IfFacts:
        """What `node`'s test proves in each alternative (computed when its body is entered)."""
        facts = self._if_tests.get(id(node))
        if facts is None:
            concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.test)
            eager_if_true, eager_if_false = self._eager_alternatives(node)
            facts = self._if_tests[id(node)] = (
                (concrete_if_true | eager_if_true, concrete_if_false | eager_if_false),
                empty_slots(node.test, self._lookups),
            )
        return facts

    @contextmanager
    def _alternative(self, node: Alternated, index: int) -> Iterator[None]:
        """Inside one alternative (for telling rebinding from alternatives); in an `if`, with what its
        test proves there."""
        if not isinstance(node, cst.If):
            with alternative_of(self._branches, node, index):
                yield
            return
        (concrete, empty) = self._if_facts(node)
        self._assume_narrowed(concrete[index])
        with alternative_of(self._branches, node, index), self._slots_empty(empty[index]):
            yield

    def _join_branch(self, node: cst.If, taken: Env) -> None:
        empty_if_false = self._if_tests.pop(id(node))[1][1]
        if not _always_exits(node.body):  # `if isinstance(x, Tracer): raise ...`: x is concrete after it
            self._join_env(taken)
        elif node.orelse is None:  # `if k in table: raise ...`: k is absent after it
            self._empty_slots += [(slot, len(self._loops)) for slot in empty_if_false]

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
        super()._for(node)
        self._loop_items.pop(id(node), None)

    def _iterate_over(self, node: cst.For) -> None:
        iterable = self._eval(node.iter)
        self._loop_items[id(node)] = self._iteration_value(node.iter, iterable)
        if iterable.flags & PYTHON_CONTAINER and not iterable.deps and self._fixed_iterable(node.iter):
            self.records.configuration_loops.add(id(node))

    def _bind_item(self, node: cst.For) -> None:
        self._bind(node.target, self._loop_items[id(node)])

    def _looping(self, node: cst.CSTNode) -> ContextManager[None]:
        return self._in_loop(node)

    def _fixed_iterable(self, iterable: cst.BaseExpression) -> bool:
        """A literal display (`("dense", "diagonal")`) or a module-level constant (`SIZES`): a fixed list."""
        if isinstance(iterable, (cst.Tuple, cst.List, cst.Set)):
            return True
        if not isinstance(iterable, cst.Name):
            return False
        resolved = self.scope.resolve(iterable.value)
        return resolved is not None and resolved[0].kind is ScopeKind.MODULE and iterable.value.isupper()

    def _try(self, node: cst.CSTNode) -> None:
        assert isinstance(node, (cst.Try, cst.TryStar))
        if any(self._handles_concretization(handler) for handler in node.handlers):
            self.records.concretization_caught.add(id(node))
        super()._try(node)

    def _enter_handler(self, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> None:
        if handler.type is not None:
            self._eval(handler.type)
        if handler.name is not None:
            self._bind(handler.name.name, UNKNOWN)

    def _handles_concretization(self, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
        """`except TypeError:` (or `jax.errors.ConcretizationTypeError`, or a tuple with one of them) whose
        body does not end by raising: code in the `try` body that needs a concrete value has a fallback
        when it meets a tracer. A bare `except:` or `except Exception:` expects other errors."""
        if handler.type is None or isinstance(last_statement(handler.body), cst.Raise):
            return False
        caught = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
        return any(qualified_name(self.scope, kind) in jax_api.CONCRETIZATION_ERRORS for kind in caught)

    def _enter_context(self, item: cst.WithItem) -> None:
        self._eval(item.item)
        if item.asname is not None:
            self._bind(item.asname.name, UNKNOWN)

    def _with_body(self, node: cst.With) -> None:
        """A `jax.ensure_compile_time_eval()` body computes at once (see :meth:`_restage`)."""
        eager = any(isinstance(item.item, cst.Call)
                    and self.records.call_names.get(id(item.item)) in jax_api.COMPILE_TIME_EVAL for item in node.items)
        if not eager:
            self._suite(node.body)
            return
        key = self.function_key
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

    def _subject(self, node: cst.Match) -> None:
        self._eval(node.subject)

    def _enter_case(self, case: cst.MatchCase) -> None:
        for captured in _captured_names(case.pattern):  # `case x:` rebinds `x`: its shape is unknown
            current = self._env.get(captured)
            if current is not None:
                self._env[captured] = current.without_shape()
        if case.guard is not None:
            self._eval(case.guard)


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
