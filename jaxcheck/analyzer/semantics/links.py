"""The names a module summary makes the project solve look up, grouped by what the solve links: a
group per call (caller, callee, and the functions its arguments depend on or pass), per function (its
parent, and the functions its return value depends on or its array leaves come from), per root, call
in a loop and re-export. Functions named in one group can change each other's solved facts."""

from __future__ import annotations

from collections.abc import Iterator

from jaxcheck.analyzer.semantics.summary import FunctionSummary, ModuleSummary
from jaxcheck.analyzer.semantics.values import CallArguments, CallDep, Deps, ParamDep, StagedDep, nested_deps


def link_groups(summary: ModuleSummary) -> Iterator[list[str]]:
    """The names the solve links together, a group per call, function, root, call in a loop and
    re-export of `summary` (a group of one links nothing but is looked up)."""
    for edge in summary.edges:
        yield edge_group(edge.caller, edge.callee, edge.arguments)
    for function in summary.functions.values():
        yield _function_group(function)
    for root in summary.roots:
        yield [root.target]
    for target in summary.repeated_calls:
        yield [target]
    for target in summary.exports.values():
        yield [target]


def linked_names(summary: ModuleSummary) -> set[str]:
    """Every name in `summary`'s link groups."""
    return {name for group in link_groups(summary) for name in group}


def returned_names(function: FunctionSummary) -> list[str]:
    """The names what `function` returns depends on: functions whose parameters or operations it holds,
    functions it calls (with what their arguments depend on)."""
    names = _dep_names(function.returns)
    for element in function.return_elements or ():
        names += _dep_names(element)
    return names


def edge_group(caller: str, callee: str, arguments: CallArguments) -> list[str]:
    return [caller, callee, *_argument_names(arguments)]


def _function_group(function: FunctionSummary) -> list[str]:
    names = [function.key, *([function.parent] if function.parent else []), *returned_names(function)]
    names += [leaf.callee for leaf in function.array_leaves if leaf.callee is not None]
    for _, arguments in function.called_params:
        names += _argument_names(arguments)
    return names


def _argument_names(arguments: CallArguments) -> list[str]:
    names = [target for _, target, _ in arguments.callables]
    return names + _dep_names(frozenset().union(*arguments.all_deps()))


def _dep_names(deps: Deps) -> list[str]:
    """The functions `deps` name, each dependency of the DAG read once (see `nested_deps`)."""
    names: list[str] = []
    for dep in nested_deps(deps):
        if isinstance(dep, (ParamDep, StagedDep)):
            names.append(dep.function)
        elif isinstance(dep, CallDep):
            names += [dep.caller, dep.callee, *(target for _, target, _ in dep.arguments.callables)]
    return names
