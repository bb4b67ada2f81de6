"""The one flow driver: statements in program order, with branches, loops, `try`, `with`, `match` and the
exits that end a path (`return`, `raise`, `break`, `continue`).

:class:`ControlFlow` owns the shape of the walk and nothing else. A subclass owns the state that flows
(the model's environment of values in :class:`~.flow.FlowDriver`, the PRNG keys in :mod:`.prng`) and
what each simple statement and expression means. Both run on this walk, so a loop, a branch or an exit
means the same thing throughout the model:

- a block runs its statements in order and stops where the path ends (a subclass whose state has no
  "unreachable" never ends one: the model's interpreter reads dead code too);
- `if`/`elif`/`else` and `match` run each alternative from a copy of the state before them and join
  what the alternatives leave (a `match` also the state before it: no case may match);
- a loop runs its body from the loop head until the head is stable, at most :data:`LOOP_PASSES` times
  (once when it does not repeat, `for x in [x0]:`, or when :data:`~.budget.FIXPOINT_DEPTH` repeating
  loops enclose it); `continue` joins the head; a `while` test runs once more when the loop ends; the
  `else` clause runs from the head, and the state after the loop joins it with what the `break`s leave;
- `try` runs its handlers from the join of the state before and after its body, `else` after the body,
  and `finally` after the join of both (or from the handlers' entry when no path completes).

Cost: the walk itself spends nothing; the subclass charges its budget per statement and per join. A
statement nested in `d` repeating loops runs at most ``LOOP_PASSES ** min(d, FIXPOINT_DEPTH)`` times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import ContextManager, Generic, TypeVar

import libcst as cst

from jaxcheck.analyzer.semantics.budget import FIXPOINT_DEPTH
from jaxcheck.analyzer.semantics.syntax import runs_once

LOOP_PASSES = 2
"""A loop body runs at most this many times: the second pass sees the values the first carried round."""

S = TypeVar("S")
Alternated = cst.If | cst.Try | cst.TryStar | cst.Match
"""The statements whose parts are alternatives (see :meth:`ControlFlow._alternative`)."""


@dataclass(slots=True)
class LoopFrame(Generic[S]):
    """A loop being walked: whether it repeats, and the states its `break`s and `continue`s leave with."""

    node: cst.CSTNode
    repeats: bool
    breaks: list[S] = field(default_factory=list)
    continues: list[S] = field(default_factory=list)


class ControlFlow(Generic[S]):
    """The walk (see the module docstring). Subclasses implement the state primitives and the hooks;
    the hooks with a body do nothing by default."""

    _loop_frames: list[LoopFrame[S]]
    """The loops being walked, innermost last (a subclass sets it to an empty list)."""

    # ------------------------------------------------------------------------------------- the state
    def _current(self) -> S:
        """The state on the path being walked."""
        raise NotImplementedError

    def _switch(self, state: S) -> S:
        """Make `state` current; return the state that was."""
        raise NotImplementedError

    def _copy(self, state: S) -> S:
        """A copy of `state` that a path may change without changing `state`."""
        raise NotImplementedError

    def _join(self, states: Sequence[S]) -> S:
        """The state where paths that left `states` meet (one state: itself)."""
        raise NotImplementedError

    def _reachable(self) -> bool:
        """Whether the current path may still run (False after it ended: see :meth:`_end_path`)."""
        return True

    def _end_path(self) -> None:
        """End the current path (a `return`, `raise`, `break` or `continue` was walked)."""

    def _fork(self) -> S:
        return self._copy(self._current())

    # ------------------------------------------------------------------------------------------ hooks
    def _simple_statements(self, statements: Sequence[cst.BaseSmallStatement]) -> None:
        """The small statements of one line (or of a one-line suite), in order."""
        raise NotImplementedError

    def _definition(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        """A `def` or `class` statement."""
        raise NotImplementedError

    def _condition(self, statement: cst.If | cst.While, test: cst.BaseExpression) -> None:
        """Evaluate the test of an `if` or a `while` (each time it runs)."""
        raise NotImplementedError

    def _subject(self, node: cst.Match) -> None:
        """Evaluate the subject of a `match`."""
        raise NotImplementedError

    def _alternative(self, node: Alternated, index: int) -> ContextManager[None]:
        """Around one alternative of `node`: an `if`'s body (0) or its `else`/`elif` (1); a `try`'s body
        and `else` (0) or its handler `index` (from 1); a `match` case (from 0)."""
        return nullcontext()

    def _join_branch(self, node: cst.If, taken: S) -> None:
        """After an `if`: join what its body left (`taken`) with what its other alternative left (current)."""
        self._switch(self._join([taken, self._current()]))

    def _iterate_over(self, node: cst.For) -> None:
        """Evaluate a `for` loop's iterable (once, before the loop)."""
        raise NotImplementedError

    def _bind_item(self, node: cst.For) -> None:
        """Bind a `for` loop's target to an item of its iterable (at the start of each pass)."""
        raise NotImplementedError

    def _looping(self, node: cst.CSTNode) -> ContextManager[None]:
        """Around the whole walk of a loop that repeats."""
        return nullcontext()

    def _enter_handler(self, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> None:
        """At the start of an `except` clause (its exception type and name)."""

    def _enter_context(self, item: cst.WithItem) -> None:
        """One item of a `with` statement (its context manager and `as` target)."""
        raise NotImplementedError

    def _with_body(self, node: cst.With) -> None:
        """The body of a `with` statement, after its items."""
        self._suite(node.body)

    def _enter_case(self, case: cst.MatchCase) -> None:
        """At the start of a `match` case (its pattern and guard)."""

    # --------------------------------------------------------------------------------------- the walk
    def _block(self, statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            if not self._reachable():
                return
            self._statement(statement)

    def _statement(self, statement: cst.CSTNode) -> None:
        """One statement: a compound one by the walk, a line of simple statements or a definition by the
        subclass."""
        walk = _COMPOUND.get(type(statement))
        if walk is not None:
            getattr(self, walk)(statement)
        elif isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            self._simple_statements(statement.body)
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            self._definition(statement)

    def _suite(self, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._block(suite.body)
        elif isinstance(suite, cst.SimpleStatementSuite):
            self._simple_statements(suite.body)

    def _if(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.If)
        self._condition(node, node.test)
        entry = self._fork()
        with self._alternative(node, 0):
            self._suite(node.body)
        taken = self._switch(entry)
        with self._alternative(node, 1):
            if isinstance(node.orelse, cst.If):
                self._if(node.orelse)
            elif node.orelse is not None:
                self._suite(node.orelse.body)
        self._join_branch(node, taken)

    def _for(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.For)
        self._iterate_over(node)

        def iteration() -> None:
            self._bind_item(node)
            self._suite(node.body)

        breaks = self._loop(node, iteration, repeats=not runs_once(node))
        self._after_loop(node, breaks)

    def _while(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.While)

        def iteration() -> None:
            self._condition(node, node.test)
            self._suite(node.body)

        breaks = self._loop(node, iteration)
        if self._reachable():
            self._condition(node, node.test)  # the test that ends the loop
        self._after_loop(node, breaks)

    def _after_loop(self, node: cst.For | cst.While, breaks: list[S]) -> None:
        if node.orelse is not None and self._reachable():
            self._suite(node.orelse.body)
        if breaks:
            self._switch(self._join([self._current(), *breaks]))

    def _loop(self, node: cst.CSTNode, iteration: Callable[[], object], repeats: bool = True) -> list[S]:
        """Walk a loop's body (`iteration`) from the current state, the loop head, until the head is
        stable (see the module docstring); leave the head current and return the `break` states."""
        depth = sum(frame.repeats for frame in self._loop_frames) + repeats
        frame: LoopFrame[S] = LoopFrame(node, repeats)
        self._loop_frames.append(frame)
        try:
            with self._looping(node) if repeats else nullcontext():
                passes = LOOP_PASSES if repeats and depth <= FIXPOINT_DEPTH else 1
                for _ in range(passes):
                    head = self._fork()
                    frame.breaks.clear()
                    frame.continues.clear()
                    iteration()
                    end = self._switch(head)
                    if not repeats:
                        self._switch(self._join([end, *frame.continues]))
                        break
                    self._switch(self._join([head, end, *frame.continues]))
                    if self._current() == head:
                        break
        finally:
            self._loop_frames.pop()
        return list(frame.breaks)

    def _break(self) -> None:
        """A `break`: the path leaves the innermost loop."""
        if self._loop_frames:
            self._loop_frames[-1].breaks.append(self._current())
        self._end_path()

    def _continue(self) -> None:
        """A `continue`: the path goes back to the innermost loop's head."""
        if self._loop_frames:
            self._loop_frames[-1].continues.append(self._current())
        self._end_path()

    def _try(self, node: cst.CSTNode) -> None:
        assert isinstance(node, (cst.Try, cst.TryStar))
        entry = self._fork()
        with self._alternative(node, 0):
            self._suite(node.body)
        handler_entry = self._join([entry, self._fork()])
        body_end = self._current()
        handler_ends: list[S] = []
        handlers: Sequence[cst.ExceptHandler | cst.ExceptStarHandler] = node.handlers
        for index, handler in enumerate(handlers, start=1):
            self._switch(self._copy(handler_entry))
            with self._alternative(node, index):
                self._enter_handler(handler)
                self._suite(handler.body)
            handler_ends.append(self._current())
        self._switch(body_end)
        if node.orelse is not None and self._reachable():
            with self._alternative(node, 0):
                self._suite(node.orelse.body)
        if handler_ends:
            self._switch(self._join([self._current(), *handler_ends]))
        if node.finalbody is not None:
            if not self._reachable():
                self._switch(self._copy(handler_entry))
            self._suite(node.finalbody.body)

    def _with(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.With)
        for item in node.items:
            self._enter_context(item)
        self._with_body(node)

    def _match(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.Match)
        self._subject(node)
        entry = self._current()
        ends = [entry]
        for index, case in enumerate(node.cases):
            self._switch(self._copy(entry))
            with self._alternative(node, index):
                self._enter_case(case)
                self._suite(case.body)
            ends.append(self._current())
        self._switch(self._join(ends))


@contextmanager
def alternative_of(stack: list[tuple[int, int]], node: cst.CSTNode, index: int) -> Iterator[None]:
    """Push `(id(node), index)` on a branch-path `stack` while inside one alternative of `node`."""
    stack.append((id(node), index))
    try:
        yield
    finally:
        stack.pop()


_COMPOUND: dict[type[cst.CSTNode], str] = {
    cst.If: "_if",
    cst.For: "_for",
    cst.While: "_while",
    cst.Try: "_try",
    cst.TryStar: "_try",
    cst.With: "_with",
    cst.Match: "_match",
}
"""The compound statements the walk interprets: the method, by node type (by name, so a subclass may extend it)."""
