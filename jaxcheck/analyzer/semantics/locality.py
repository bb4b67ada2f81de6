"""Which functions a change to some modules' summaries may give other solved facts, and which modules
a solve of those needs, for the index's early cutoff.

The project solve links functions only through what summaries name: calls (with the values and
callables they pass), the parameters and calls a value depends on, enclosing functions, the array
leaves a function returns, trace roots, calls in loops and re-exports. Functions that no such link
joins are solved independently: each group reaches its fixpoint in the same steps, in the same order,
alone or with the rest. A :class:`LinkTable` records the groups of a solved project with the modules a
solve of each needs (those that define, name or re-export one of its functions); after summaries
change, the groups their old and new links touch (joined by the new links) are solved again with those
modules alone, and the rest of the project keeps its solved facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from jaxcheck.analyzer.semantics.solver import Solution, resolve_target, solve
from jaxcheck.analyzer.semantics.links import edge_group, link_groups, linked_names, returned_names
from jaxcheck.analyzer.semantics.summary import FunctionSummary, ModuleSummary

Resolve = Callable[[str], "str | None"]
"""A name to the function key it refers to in the project solve (None: no project function)."""
Lookup = Callable[[str], "tuple[str | None, list[str]]"]
"""A name to the function key it refers to in a solve, and the names resolving it went through."""


@dataclass(frozen=True, slots=True)
class LinkTable:
    """The groups of linked functions of a solved project (see the module docstring): group `n` has the
    function keys `functions[n]`, and a solve that gives them their facts needs the modules `modules[n]`
    (those that define, name or re-export one of them). Parallel tuples of names: an entry that decodes
    fast. `ambiguous` are the function keys several modules define (which of them a solve keeps depends
    on every module in it: never solved in part)."""

    functions: tuple[tuple[str, ...], ...]
    modules: tuple[tuple[str, ...], ...]
    ambiguous: tuple[str, ...] = ()

    def group_index(self) -> dict[str, int]:
        """Per function key, the index of its group."""
        return {key: number for number, keys in enumerate(self.functions) for key in keys}

    def merged(self, groups: Container[int], functions: Iterable[str], modules: Iterable[str]) -> LinkTable:
        """This table with the `groups` replaced by one group of `functions` that needs `modules` (give
        theirs too: a larger group is solved with more modules, never wrongly)."""
        kept = [number for number in range(len(self.functions)) if number not in groups]
        merged = ((tuple(sorted(functions)), tuple(sorted(modules))),) if functions else ()
        return LinkTable((*(self.functions[number] for number in kept), *(keys for keys, _ in merged)),
                         (*(self.modules[number] for number in kept), *(needed for _, needed in merged)),
                         self.ambiguous)


@dataclass(frozen=True, slots=True)
class Change:
    """What a change to some modules' summaries may alter: the `functions` (of those modules and of
    others) whose solved facts it may change, the recorded `groups` (indexes into a :class:`LinkTable`)
    they come from, and the `modules` other than the changed ones that a solve giving those facts needs."""

    functions: frozenset[str]
    groups: frozenset[int]
    modules: frozenset[str]


class _Partition:
    """Disjoint sets of hashable nodes (union-find)."""

    def __init__(self) -> None:
        self._parents: dict[Hashable, Hashable] = {}

    def find(self, node: Hashable) -> Hashable:
        """The representative of `node`'s set."""
        root = node
        while (parent := self._parents.get(root, root)) != root:
            root = parent
        while node != root:  # path compression
            self._parents[node], node = root, self._parents[node]
        return root

    def join(self, nodes: Sequence[Hashable]) -> None:
        """Put `nodes` in one set."""
        first = self.find(nodes[0]) if nodes else None
        for node in nodes[1:]:
            root = self.find(node)
            if root != first:
                self._parents[root] = first


def link_table(summaries: Sequence[ModuleSummary], lookup: Lookup, functions: Container[str]) -> LinkTable:
    """The groups of linked functions of the solve of `summaries` (`lookup` resolves names in it; its
    `functions` are the keys it knows), each with the modules that define, name or re-export one of its
    functions (see :class:`LinkTable`)."""
    modules = {summary.module for summary in summaries}
    owners: dict[str, set[str]] = {}
    for summary in summaries:
        for key in summary.functions:
            if key in functions:
                owners.setdefault(key, set()).add(summary.module)
    partition = _Partition()
    needs: dict[str, set[str]] = {key: set(owner) for key, owner in owners.items()}
    looked_up: dict[str, tuple[str | None, set[str]]] = {}
    for summary in summaries:
        for names in link_groups(summary):
            keys = []
            for name in names:
                if name not in looked_up:
                    found, visited = lookup(name)
                    looked_up[name] = found, {hop.rpartition(".")[0] for hop in visited[:-1]} & modules
                target, hops = looked_up[name]
                if target is not None and target in needs:
                    keys.append(target)
                    needs[target].add(summary.module)
                    needs[target].update(hops)
            partition.join(keys)
    members: dict[Hashable, list[str]] = {}
    for key in owners:
        members.setdefault(partition.find(key), []).append(key)
    groups = list(members.values())
    return LinkTable(tuple(map(tuple, groups)), tuple(tuple(sorted(set().union(*(needs[key] for key in keys))))
                                                      for keys in groups),
                     tuple(sorted(key for key, owner in owners.items() if len(owner) > 1)))


def merged_links(table: LinkTable, change: Change, moved: list[tuple[ModuleSummary, ModuleSummary]],
                  lazy: LazyProject) -> LinkTable:
    """`table` after the changes of some modules' summaries (`moved`, each from old to new): the groups
    the `change` touches become one, with the changed modules and the modules their lookups go through
    (their links may have split some: a larger group is solved with more modules, never wrongly)."""
    removed = {key for before, after in moved for key in before.functions.keys() - after.functions.keys()}
    modules = {module for number in change.groups for module in table.modules[number]}
    for _, after in moved:
        hops = {name.rpartition(".")[0] for name in referenced_names(after, lazy.overriding(after).visited)}
        modules.update(hops & lazy.modules.keys(), [after.module])
    return table.merged(change.groups, change.functions - removed, modules)


def referenced_names(summary: ModuleSummary, visited: Callable[[str], Iterable[str]]) -> frozenset[str]:
    """Every name other than its own functions' keys that `summary` makes the solve look up, with the
    names each lookup goes through (`visited`: see :func:`.solver.resolve_target`)."""
    names: set[str] = set()
    for name in linked_names(summary):
        names.update(visited(name))
    return frozenset(names - summary.functions.keys())


def changed_functions(changes: Sequence[tuple[ModuleSummary, ModuleSummary]], resolve_old: Resolve,
                      resolve_new: Resolve, table: LinkTable, looked_up_elsewhere: Container[str]) -> Change | None:
    """What the changes of some modules' summaries (each from old to new) may alter in the project solve
    that `table` records (`resolve_old`/`resolve_new` resolve names in the project as it was and is):
    the groups of functions the old and new summaries link their changed functions, calls, roots,
    calls in loops and re-exports to. None when a solve of part of the project cannot tell: whether a
    module may turn on 64-bit mode or names 64-bit dtypes changed, a function a module adds or removes
    or a re-export it changes is a name other modules look up (`looked_up_elsewhere`: they would link
    to it anew), a touched function is defined by several modules, or a name resolves to a function the
    table lacks. Function keys of the changed modules must be unique in the project (the caller checks
    that no other module defines one of them)."""
    def module_facts(summary: ModuleSummary) -> tuple[str, str, bool, bool]:
        return summary.module, summary.path, summary.enables_x64, summary.wide_dtypes

    exports: list[set[str]] = []
    for old, new in changes:
        changed_exports = {name for name in old.exports.keys() | new.exports.keys()
                           if old.exports.get(name) != new.exports.get(name)}
        anew = (*(old.functions.keys() ^ new.functions.keys()), *(f"{new.module}.{name}" for name in changed_exports))
        if module_facts(old) != module_facts(new) or any(name in looked_up_elsewhere for name in anew):
            return None
        exports.append(changed_exports)
    group_of = table.group_index()
    own = {key for old, new in changes for key in (*old.functions, *new.functions)}
    partition = _Partition()
    recorded = [group_of[key] for old, _ in changes for key in old.functions if key in group_of]
    for old, _ in changes:
        for key in old.functions:
            if key in group_of:
                partition.join([key, group_of[key]])
    unknown = object()
    """Stands for a function of another module that the table lacks."""

    def node_of(name: str, resolve: Resolve) -> Hashable | None:
        key = name if name in own else resolve(name)
        return None if key is None else key if key in own else group_of.get(key, unknown)

    def join(groups: Iterable[list[str]], resolve: Resolve) -> list[Hashable]:
        """Link each group's nodes; return them all."""
        nodes: list[Hashable] = []
        for group in groups:
            members = [node for node in (node_of(name, resolve) for name in group) if node is not None]
            partition.join(members)
            nodes.extend(members)
        return nodes

    nodes: list[Hashable] = [*recorded]
    seeds: list[Hashable] = []
    for (old, new), changed_exports in zip(changes, exports):
        nodes += join(link_groups(old), resolve_old) + join(link_groups(new), resolve_new)
        seeds += [key for key in (*old.functions, *new.functions) if old.functions.get(key) != new.functions.get(key)]
        seeds += join(_changed_groups(old, new, changed_exports), resolve_old)
        seeds += join(_changed_groups(new, old, changed_exports), resolve_new)
    touched = {partition.find(seed) for seed in seeds}
    if partition.find(unknown) in touched:
        return None
    groups = frozenset(node for node in nodes if isinstance(node, int) and partition.find(node) in touched)
    functions = {key for key in own if partition.find(key) in touched}
    for number in groups:
        functions.update(table.functions[number])
    if not functions.isdisjoint(table.ambiguous):
        return None
    modules = set().union(*(table.modules[number] for number in groups)) - {new.module for _, new in changes}
    return Change(frozenset(functions), groups, frozenset(modules))


def _changed_groups(summary: ModuleSummary, other: ModuleSummary, changed_exports: set[str]) -> Iterator[list[str]]:
    """The link groups of `summary`'s calls, roots, calls in loops and re-exports that `other` lacks."""
    extra_edges = Counter(summary.edges) - Counter(other.edges)
    for edge in extra_edges:
        yield edge_group(edge.caller, edge.callee, edge.arguments)
    extra_roots = Counter(summary.roots) - Counter(other.roots)
    for root in extra_roots:
        yield [root.target]
    for target in (summary.repeated_calls - other.repeated_calls) | (summary.called_twice - other.called_twice):
        yield [target]
    for name in changed_exports:
        if name in summary.exports:
            yield [summary.exports[name]]


class Unresolvable(Exception):
    """A lookup needs a module whose summary cannot be had (unreadable entry, or a module name that
    several files share)."""


File = TypeVar("File", bound=Hashable)


def named_elsewhere(named_by: Sequence[ModuleSummary], included: Sequence[ModuleSummary], modules: Mapping[File, str],
                    load: Callable[[File], ModuleSummary | None]) -> list[ModuleSummary]:
    """The summaries of the modules whose functions the `named_by` summaries name, with those their
    return values and array leaves come from (see :meth:`LazyProject.named_summaries`), loaded by `load`
    from the files of `modules` (each with its module name), by module name; the modules of `named_by`
    and `included` left out. A module name several files share, or a file that cannot be summarised,
    ends the lookups of the summary that needs it: what they would find is not known."""
    if not modules:
        return []
    files: dict[str, list[File]] = {}
    for file, module in modules.items():
        files.setdefault(module, []).append(file)
    given = {summary.module: summary for summary in (*named_by, *included)}
    loaders: dict[str, Callable[[], ModuleSummary | None]] = {
        module: partial(load, paths[0]) for module, paths in files.items() if module not in given}
    loaders.update({module: partial(_given, summary) for module, summary in given.items()})
    shared = frozenset(module for module, paths in files.items() if len(paths) > 1 and module not in given)
    lazy = LazyProject(loaders, shared)
    for summary in named_by:
        try:
            lazy.named_summaries(summary)
        except Unresolvable:
            continue
    return sorted((summary for summary in lazy.loaded() if summary.module not in given), key=lambda s: s.module)


def _given(summary: ModuleSummary) -> ModuleSummary:
    return summary


class LazyProject:
    """Resolves names as the project solve does, over module summaries loaded only when a lookup
    needs them: `modules` maps each module of the solve to a loader of its summary (None: unusable);
    `shared` are module names several files have (the solve's merge order decides: never resolved);
    `overrides` gives some modules' summaries outright. Loaded summaries are shared with
    :meth:`overriding`."""

    def __init__(self, modules: dict[str, Callable[[], ModuleSummary | None]], shared: frozenset[str] = frozenset(),
                 overrides: dict[str, ModuleSummary] | None = None,
                 loaded: dict[str, ModuleSummary] | None = None) -> None:
        self.modules = modules
        self.shared = shared
        self.overrides = overrides or {}
        self._loaded: dict[str, ModuleSummary] = {} if loaded is None else loaded

    def overriding(self, summary: ModuleSummary) -> LazyProject:
        """This project with `summary` in place of its module's summary; Unresolvable when several
        files have that module name."""
        if summary.module in self.shared:
            raise Unresolvable(summary.module)
        return LazyProject(self.modules, self.shared, {**self.overrides, summary.module: summary}, self._loaded)

    def summaries(self, modules: Iterable[str]) -> list[ModuleSummary]:
        """The summaries of those of `modules` that are in the solve (overriding ones as given), in the
        solve's order; Unresolvable when one cannot be had."""
        wanted = set(modules)
        return [summary for module in self.modules if module in wanted and (summary := self._summary(module)) is not None]

    def solve(self, summaries: Iterable[ModuleSummary]) -> Solution:
        """The solve of `summaries` (without repeats: the last of a module counts), part of this project:
        in the order the project solve takes their modules, so it links and visits what it shares with
        the whole in the same order, and knowing the project's modules (see :func:`.solver.solve`)."""
        position = {module: number for number, module in enumerate(self.modules)}
        unique = {summary.module: summary for summary in summaries}
        ordered = sorted(unique.values(), key=lambda summary: position.get(summary.module, len(position)))
        return solve(ordered, self.modules)

    def loaded(self) -> list[ModuleSummary]:
        """The summaries loaded so far (not the overriding ones), in the order they were loaded."""
        return list(self._loaded.values())

    def named_summaries(self, summary: ModuleSummary) -> list[ModuleSummary]:
        """The summaries of the other modules whose functions `summary` (in place of its module's) names,
        and of those their return values and array leaves come from, with those resolving the names went
        through."""
        now = self.overriding(summary)
        pending = sorted(linked_names(summary))
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            key = now.resolve(name) if name not in seen else None
            seen.add(name)
            function = now.function(key) if key is not None and key not in summary.functions else None
            if function is not None:
                pending += [leaf.callee for leaf in function.array_leaves if leaf.callee is not None]
                pending += returned_names(function)
        return [loaded for loaded in now.loaded() if loaded.module != summary.module]

    def function(self, key: str) -> FunctionSummary | None:
        """The project function with key `key`, if any (every module that may define it is loaded); a
        function keyed like a module of the solve is none (see :func:`.solver.solve`)."""
        found = [summary.functions[key] for _, summary in self._definers(key)]
        return found[0] if found and key not in self.modules else None

    def defined_elsewhere(self, key: str, module: str) -> bool:
        """Whether a module other than `module` defines a function with key `key` (a class of a package
        named like one of its submodules): the solve would merge the two."""
        return bool(self._definers(key, skip=module))

    def _definers(self, key: str, skip: str | None = None) -> list[tuple[str, ModuleSummary]]:
        """The modules (other than `skip`, which is not loaded) whose summaries define function `key`:
        those named by a prefix of it, longest first."""
        parts = key.split(".")
        prefixes = (".".join(parts[:end]) for end in range(len(parts) - 1, 0, -1))
        return [(prefix, summary) for prefix in prefixes if prefix != skip
                and (summary := self._summary(prefix)) is not None and key in summary.functions]

    def resolve(self, name: str) -> str | None:
        """The function key `name` refers to, if any; Unresolvable when that cannot be told."""
        return resolve_target(name, self._is_function, self._forwarded)[0]

    def visited(self, name: str) -> list[str]:
        """The names resolving `name` goes through."""
        return resolve_target(name, self._is_function, self._forwarded)[1]

    def _summary(self, module: str) -> ModuleSummary | None:
        if module in self.overrides:
            return self.overrides[module]
        if module in self.shared:
            raise Unresolvable(module)
        if module not in self.modules:
            return None
        if module not in self._loaded:
            summary = self.modules[module]()
            if summary is None:
                raise Unresolvable(module)
            self._loaded[module] = summary
        return self._loaded[module]

    def _is_function(self, name: str) -> bool:
        return self.function(name) is not None

    def _forwarded(self, name: str) -> str | None:
        module, _, attribute = name.rpartition(".")
        summary = self._summary(module)
        return summary.exports.get(attribute) if summary is not None else None
