"""Whether a change to one module's summary stays inside that module, for the index's early cutoff.

The project solve links functions only through what summaries name: calls (with the values and
callables they pass), the parameters and calls a value depends on, enclosing functions, the array
leaves a function returns, trace roots, calls in loops and re-exports. Functions that no such link
joins are solved independently: each group reaches its fixpoint in the same steps, in the same order,
alone or with the rest. So when every group a change touches lies inside the changed module (no link
to a function elsewhere, no name of it used elsewhere), the rest of the project keeps its solved facts,
and a solve of the module alone gives the touched functions theirs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator

from jaxcheck.analyzer.semantics.solver import resolve_target
from jaxcheck.analyzer.semantics.links import edge_group, link_groups, linked_names
from jaxcheck.analyzer.semantics.summary import FunctionSummary, ModuleSummary

Resolve = Callable[[str], "str | None"]
"""A name to the function key it refers to in the project solve (None: no project function)."""

OUTSIDE = "\0outside"
"""Stands for every function of another module."""


def referenced_names(summary: ModuleSummary, visited: Callable[[str], Iterable[str]]) -> frozenset[str]:
    """Every name other than its own functions' keys that `summary` makes the solve look up, with the
    names each lookup goes through (`visited`: see :func:`.solver.resolve_target`)."""
    names: set[str] = set()
    for name in linked_names(summary):
        names.update(visited(name))
    return frozenset(names - summary.functions.keys())


def changed_functions(old: ModuleSummary, new: ModuleSummary, resolve_old: Resolve, resolve_new: Resolve,
                      used_elsewhere: Container[str]) -> frozenset[str] | None:
    """The functions of the module whose solved facts the change from `old` to `new` may alter, when
    the change stays inside the module; None when it may reach another module: a touched group of linked
    functions (see the module docstring) links to a function elsewhere (`resolve_old`/`resolve_new`
    resolve the names of each summary in the project as it was and is), or one of its functions or a
    changed module-level name is in `used_elsewhere` (names other modules look up), or whether the module
    may turn on 64-bit mode or names 64-bit dtypes changed. Function keys must be unique in the project
    (the caller checks that no other module defines one of them)."""
    def module_facts(summary: ModuleSummary) -> tuple[str, str, bool, bool]:
        return summary.module, summary.path, summary.enables_x64, summary.wide_dtypes

    if module_facts(old) != module_facts(new):
        return None
    own = old.functions.keys() | new.functions.keys()
    parents: dict[str, str] = {}

    def find(node: str) -> str:
        while parents.get(node, node) != node:
            node = parents[node]
        return node

    def node_of(name: str, resolve: Resolve) -> str | None:
        key = name if name in own else resolve(name)
        return None if key is None else key if key in own else OUTSIDE

    def join(groups: Iterable[list[str]], resolve: Resolve) -> list[str]:
        """Link each group's nodes; return them all."""
        nodes: list[str] = []
        for group in groups:
            members = [node for node in (node_of(name, resolve) for name in group) if node is not None]
            for member in members[1:]:
                parents[find(member)] = find(members[0])
            nodes.extend(members)
        return nodes

    join(link_groups(old), resolve_old)
    join(link_groups(new), resolve_new)
    seeds = [key for key in own if old.functions.get(key) != new.functions.get(key)]
    changed_exports = {name for name in old.exports.keys() | new.exports.keys()
                       if old.exports.get(name) != new.exports.get(name)}
    seeds += join(_changed_groups(old, new, changed_exports), resolve_old)
    seeds += join(_changed_groups(new, old, changed_exports), resolve_new)
    touched = {find(seed) for seed in seeds}
    if find(OUTSIDE) in touched:
        return None
    functions = frozenset(key for key in own if find(key) in touched)
    names = [*functions, *(f"{new.module}.{name}" for name in changed_exports)]
    if any(name in used_elsewhere for name in names):
        return None
    return functions


def _changed_groups(summary: ModuleSummary, other: ModuleSummary, changed_exports: set[str]) -> Iterator[list[str]]:
    """The link groups of `summary`'s calls, roots, calls in loops and re-exports that `other` lacks."""
    extra_edges = Counter(summary.edges) - Counter(other.edges)
    for edge in extra_edges:
        yield edge_group(edge.caller, edge.callee, edge.arguments)
    extra_roots = Counter(summary.roots) - Counter(other.roots)
    for root in extra_roots:
        yield [root.target]
    for target in summary.repeated_calls - other.repeated_calls:
        yield [target]
    for name in changed_exports:
        if name in summary.exports:
            yield [summary.exports[name]]


class Unresolvable(Exception):
    """A lookup needs a module whose summary cannot be had (unreadable entry, or a module name that
    several files share)."""


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

    def loaded(self) -> list[ModuleSummary]:
        """The summaries loaded so far (not the overriding ones), in the order they were loaded."""
        return list(self._loaded.values())

    def function(self, key: str) -> FunctionSummary | None:
        """The project function with key `key`, if any (every module that may define it is loaded)."""
        found = [summary.functions[key] for _, summary in self._definers(key)]
        return found[0] if found else None

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
