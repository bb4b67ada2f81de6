"""The names a module summary makes the project solve look up, grouped by what the solve links: a
group per call (caller, callee, and the functions its arguments depend on or pass), per function (its
parent, and the functions its return value depends on or its array leaves come from), per root, call
in a loop and re-export. Functions named in one group can change each other's solved facts.

Cost: the groups of one summary share a walk of its dependency DAG (:class:`_Walk`). A node met again
adds only its own names (an opaque result, which has none, the first name under it): the group that
first met it holds every name under it, and the shared name links the two, so the groups connect the
same functions as if each held all its names, at a cost linear in the DAG (not quadratic in a chain of
calls threading values through helpers)."""

from __future__ import annotations

from collections.abc import Iterator

from jaxcheck.analyzer.semantics.summary import FunctionSummary, ModuleSummary
from jaxcheck.analyzer.semantics.values import (
    CallArguments, CallDep, Dep, Deps, OpaqueDep, ParamDep, StagedDep, inner_deps,
)


def link_groups(summary: ModuleSummary) -> Iterator[list[str]]:
    """The names the solve links together, a group per call, function, root, call in a loop and
    re-export of `summary` (a group of one links nothing but is looked up)."""
    walk = _Walk()
    for edge in summary.edges:
        yield edge_group(edge.caller, edge.callee, edge.arguments, walk)
    for function in summary.functions.values():
        yield _function_group(function, walk)
    for root in summary.roots:
        yield [root.target]
    for target in summary.repeated_calls | summary.called_twice:
        yield [target]
    for target in summary.exports.values():
        yield [target]


def linked_names(summary: ModuleSummary) -> set[str]:
    """Every name in `summary`'s link groups."""
    return {name for group in link_groups(summary) for name in group}


def returned_names(function: FunctionSummary, walk: _Walk | None = None) -> list[str]:
    """The names what `function` returns depends on: functions whose parameters or operations it holds,
    functions it calls (with what their arguments depend on)."""
    walk = walk or _Walk()
    names = walk.names(function.returns)
    for element in function.return_elements or ():
        names += walk.names(element)
    return names


def edge_group(caller: str, callee: str, arguments: CallArguments, walk: _Walk | None = None) -> list[str]:
    """The names one call links: caller, callee, and what its arguments depend on or pass."""
    return [caller, callee, *_argument_names(arguments, walk or _Walk())]


def _function_group(function: FunctionSummary, walk: _Walk) -> list[str]:
    names = [function.key, *([function.parent] if function.parent else []), *returned_names(function, walk)]
    names += [leaf.callee for leaf in function.array_leaves if leaf.callee is not None]
    for _, arguments in function.called_params:
        names += _argument_names(arguments, walk)
    return names


def _argument_names(arguments: CallArguments, walk: _Walk) -> list[str]:
    names = [target for _, target, _ in arguments.callables]
    for deps in arguments.all_deps():
        names += walk.names(deps)
    return names


class _Walk:
    """A walk over one summary's dependency DAG, shared by its groups (see the module docstring)."""

    def __init__(self) -> None:
        self._anchors: dict[Dep, str | None] = {}
        """Per node met, a name at or under it (None: it names no function)."""

    def names(self, deps: Deps) -> list[str]:
        """The functions `deps` name; of a node met before, only its own names or its anchor."""
        names: list[str] = []
        pending: list[Dep | tuple[OpaqueDep, int]] = list(deps)
        while pending:
            item = pending.pop()
            if isinstance(item, tuple):  # every input of an opaque result is walked: its first name is the anchor
                opaque, start = item
                self._anchors[opaque] = names[start] if len(names) > start else None
                continue
            if item in self._anchors:
                anchor = self._anchors[item]
                names += _own_names(item) or ([anchor] if anchor is not None else [])
                continue
            own = _own_names(item)
            names += own
            if own:
                self._anchors[item] = own[0]
            elif isinstance(item, OpaqueDep):
                self._anchors[item] = None  # until its inputs are walked (a DAG has no cycle back to it)
                pending.append((item, len(names)))
            pending += inner_deps(item)
        return names


def _own_names(dep: Dep) -> list[str]:
    if isinstance(dep, (ParamDep, StagedDep)):
        return [dep.function]
    if isinstance(dep, CallDep):
        return [dep.caller, dep.callee, *(target for _, target, _ in dep.arguments.callables)]
    return []
