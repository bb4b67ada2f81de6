"""Program order for stale reads: can a change to a variable happen after a traced function that reads
it was first traced, while its compiled program is still reused?

The builder records, per code scope (the module or a function: the code whose own statements run in
order), the calls it makes in traversal order: calls of project functions, `jax.jit(f)(x)`, lax calls
with their bodies, and calls of names bound to a transform's result (`step = jax.jit(f)`, then
`step(x)`). A change (see :class:`ChangeSite`) makes a read by traced function `reader` stale when:

- it runs in code other than the variable's own scope (a function that can run at any time: `def
  set_rate(r): global rate`, a method mutating a module-level dict), unless that code provably runs
  before anything may trace `reader` (a setter that only `main()` calls before training); or
- it runs in the variable's own scope after a call there that may trace `reader` (or in a loop with
  such a call), and, for a function's local variable, before a later call there (or in that loop).
  Straight-line setup that finishes before any call is not staleness; nor is a store after the last call
  (at module level: the last call of the module's own code, unless another module may call `reader`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import ChangeSite

Reaches = Callable[[str, str], bool]
"""`reaches(callee, function)`: calling `callee` (a function key or qualified name) may run `function`."""


@dataclass(frozen=True, slots=True)
class CallEvent:
    """A call made by a scope's own code: when (traversal order), inside which loops, of what, and
    the call node (for a note citing it)."""

    order: int
    loops: tuple[int, ...]
    callee: str
    node: cst.CSTNode | None = field(default=None, compare=False)


@dataclass(slots=True)
class ProgramOrder:
    """Call events per code scope, and names bound to a transform's result, as the traversal meets them."""

    _events: dict[str, dict[int, CallEvent]] = field(default_factory=dict)
    _transformed: dict[tuple[str, str], str] = field(default_factory=dict)
    _unresolved: dict[str, list[int]] = field(default_factory=dict)
    """Per code scope, when (traversal order) it calls something the model cannot name (`step(x)` of a
    `partial`, a method of an object): such a call may run any function."""

    def called(self, scope: str, node_id: int, event: CallEvent) -> None:
        """Record a call by `scope`'s code (deduplicated per call node: loops are interpreted twice)."""
        self._events.setdefault(scope, {}).setdefault(node_id, event)

    def called_unresolved(self, scope: str, order: int) -> None:
        """Record a call by `scope`'s code of a callable the model cannot name."""
        self._unresolved.setdefault(scope, []).append(order)

    def bound_transform(self, scope: str, name: str, target: str | None) -> None:
        """`name` of `scope` now holds a transform of `target` (`step = jax.jit(f)`), or no longer does."""
        if target is None:
            self._transformed.pop((scope, name), None)
        else:
            self._transformed[(scope, name)] = target

    def transformed_target(self, scope: str, name: str) -> str | None:
        """The function a transform bound to `name` of `scope` wraps, if any."""
        return self._transformed.get((scope, name))

    def goes_stale(self, change: ChangeSite, owner: str, runs_later: bool, reader: str, reaches: Reaches,
                   module_level: bool = False, receiver: str | None = None, others: frozenset[str] = frozenset(),
                   elsewhere: Callable[[str], bool] | None = None, escaping: Collection[str] = ()) -> bool:
        """Whether `change` to a variable of scope `owner` can make `reader`'s compiled program stale;
        `runs_later`: `reader` may also run after `owner`'s code has finished (a module-level variable
        read by a function other modules may call). Module code (`module_level`) that calls something
        the model cannot name after the change may call `reader` again. With `receiver` (the change
        stores an attribute of the object that variable holds), a call that passes only `others` (other
        variables holding objects of its class), not `receiver`, does not use it. A change to a
        module-level variable in a function is stale unless, with `elsewhere` (whether code of another
        module may run a function), it provably runs before anything may trace `reader` (see
        :meth:`_before_any_trace`); `escaping` are the functions that may run when program order does
        not see it (`ModuleRecords.escaping_functions`): none of them may reach `reader`."""
        if change.scope != owner:
            return not (module_level and elsewhere is not None
                        and not any(f == reader or reaches(f, reader) for f in escaping)
                        and self._before_any_trace(change.scope, change.order, change.loops, owner, reader, reaches,
                                                   elsewhere, escaping, frozenset()))
        events = [e for e in self._events.get(owner, {}).values()
                  if reaches(e.callee, reader) and (receiver is None or _may_use(e.node, receiver, others))]
        traced_before = any(e.order < change.order or _share_loop(e.loops, change.loops) for e in events)
        if not traced_before:
            return False
        if runs_later:
            return True  # after import, its importers may call it again
        if module_level and any(order > change.order for order in self._unresolved.get(owner, ())):
            return True
        return any(e.order > change.order or _share_loop(e.loops, change.loops) for e in events)


    def _before_any_trace(self, scope: str, order: int, loops: tuple[int, ...], owner: str, reader: str,
                          reaches: Reaches, elsewhere: Callable[[str], bool], escaping: Collection[str],
                          seen: frozenset[str]) -> bool:
        """Whether the point `order` (inside `loops`) of `scope`'s code runs, every time it runs, before
        anything may trace `reader`: nothing before it in `scope` may (no call that reaches `reader`, no
        call the model cannot name), and `scope` is the module's code (`owner`: it runs once), or a
        function only this module calls, each of whose calls is such a point; one that traces `reader`
        itself after the point must be called once, outside any loop (`main()` setting a global from its
        arguments, then training)."""
        tracing = [e for e in self._events.get(scope, {}).values() if reaches(e.callee, reader)]
        if any(e.order < order or _share_loop(e.loops, loops) for e in tracing) \
                or any(other < order for other in self._unresolved.get(scope, ())):
            return False
        if scope == owner:
            return True
        if scope in seen or scope in escaping or elsewhere(scope):
            return False
        sites = [(caller, e) for caller, events in self._events.items() for e in events.values() if e.callee == scope]
        traces_after = any(e.order > order for e in tracing) or bool(self._unresolved.get(scope))
        if not sites or (traces_after and (len(sites) > 1 or sites[0][1].loops)):
            return False
        return all(self._before_any_trace(caller, e.order, e.loops, owner, reader, reaches, elsewhere, escaping,
                                          seen | {scope})
                   for caller, e in sites)

    def traced_before(self, change: ChangeSite, owner: str, reader: str, reaches: Reaches) -> CallEvent | None:
        """The first call of scope `owner` that may trace `reader` and runs before `change` (or in a loop
        with it): the call after which the change makes `reader`'s program stale; None when the change
        runs elsewhere (program order does not decide it)."""
        if change.scope != owner:
            return None
        events = sorted((e for e in self._events.get(owner, {}).values() if reaches(e.callee, reader)),
                        key=lambda e: e.order)
        return next((e for e in events if e.order < change.order or _share_loop(e.loops, change.loops)), None)


def _may_use(node: cst.CSTNode | None, name: str, others: frozenset[str]) -> bool:
    """Whether call `node` may use the object variable `name` holds: it passes it (`name.act(...)`,
    `f(name)`), or passes none of `others` (`run_episode()` may read a global `name`)."""
    if not isinstance(node, cst.Call):
        return True  # unknown: it may
    func = node.func
    while isinstance(func, cst.Attribute):
        func = func.value
    passed = {func.value} if isinstance(func, cst.Name) else set()
    passed |= {arg.value.value for arg in node.args if isinstance(arg.value, cst.Name)}
    return name in passed or not passed & others


def _share_loop(first: tuple[int, ...], second: tuple[int, ...]) -> bool:
    return bool(first) and bool(second) and first[0] == second[0]
