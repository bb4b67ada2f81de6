"""The project index's early cutoff: a re-run after a few files changed, answered from the last complete
run's state (see :mod:`.index`) by linting again only what the changes can reach, and the state and link
table a complete run records for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from jaxcheck.analyzer.cache import hash_parts
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.index import FileState, ProjectFile, ProjectIndex, RunState
from jaxcheck.analyzer.outcome import Analysis, FileOutcome
from jaxcheck.analyzer.parallel import FileTask
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.semantics.locality import (
    Change, LazyProject, LinkTable, Unresolvable, changed_functions, link_table, merged_links, referenced_names,
)
from jaxcheck.analyzer.semantics.solver import SignatureParts, Solution, lookup_name, solve
from jaxcheck.analyzer.semantics.summary import ModuleSummary

MAX_CUTOFF_FILES = 16
"""A re-run that would lint more files than this one by one checks the whole request."""
MODULE_PART = ""
"""The key of the 64-bit-mode part of a module's solve signature among its functions' parts (no function key
is empty)."""


class CutoffLinter(Protocol):
    """What the early cutoff needs of the linter."""

    def analyze(self, display_path: str, data: bytes, module: ModuleName) -> Analysis | FileOutcome:
        """Parse one file and build its model and summary; a FileOutcome when it cannot be analysed."""

    def lint(self, analysis: Analysis, solution: Solution) -> FileOutcome:
        """Lint an analysed file with `solution`."""

    def indexed_importer_summaries(self, index: ProjectIndex, others: dict[Path, ProjectFile],
                                   checked: dict[Path, ModuleName],
                                   own_keys: dict[Path, str] | None = None) -> list[ModuleSummary]:
        """The summaries of the project files among `others` that import the `checked` modules."""

    def summary_settings(self, path: Path) -> str:
        """What of a file's settings its summary depends on."""


class EarlyCutoff:
    """The early cutoff of one run, linting through `linter`."""

    def __init__(self, linter: CutoffLinter) -> None:
        self.linter = linter
        self.traced: bool | None = None
        """After :meth:`findings` answered: whether the run traces any function, as far as the last
        run's state tells (None when a summary changed and that state traced nothing, or did not say)."""

    def findings(self, state: RunState, tasks: dict[Path, FileTask], checked: dict[Path, ProjectFile],
                 others: dict[Path, ProjectFile], index: ProjectIndex, keys: dict[Path, str],
                 state_key: str) -> list[Diagnostic] | None:
        """The run's findings from the last run's `state` when the files changed since leave most of the
        project solve as it was (see :mod:`.semantics.locality`): only the groups of linked functions
        their summary changes touch are solved again, with the modules they need; the files of those
        modules keep their findings when the parts of their signatures about the touched functions are
        as recorded, else they are linted again, like each changed file and each file whose notes cite
        one, with a solve that gives them the recorded parts for every other function (see
        :meth:`_relinted`). None when that does not hold (a file failed, too many files changed, a solve
        of part of the project cannot tell): the caller then checks the whole request."""
        recorded = {Path(file.path): file for file in state.files}
        if recorded.keys() != checked.keys():
            return None
        changed = [path for path, file in checked.items() if file.digest != recorded[path].digest]
        moved = {str(path) for path in changed}
        citing = {Path(file.path) for file in state.files if moved.intersection(file.cites)} - set(changed)
        if len(changed) + len(citing) > MAX_CUTOFF_FILES:
            return None  # too many to lint one by one
        project = {**checked, **others}
        finals: dict[Path, FileState] = {}
        try:  # an exception here is the whole run's to report, with the file's name
            edits: dict[Path, tuple[ModuleSummary, Analysis]] = {}
            for path in changed:
                task, before = tasks[path], index.cache.load(recorded[path].own_key)
                analysis = self.linter.analyze(task.display_path, task.data, task.module)
                if before is None or before.summary is None or isinstance(analysis, FileOutcome):
                    return None
                edits[path] = (before.summary, analysis)
            moved_summaries = {path: (old, analysis.summary) for path, (old, analysis) in edits.items()
                               if old != analysis.summary}
            # with every summary as it was, the solve is too; a state that traced something still does
            # after a change unless it took away every transform (then the hint is only missed)
            self.traced = state.traced if not moved_summaries or state.traced else None
            if moved_summaries and not state.converged:
                return None
            lazy = self._indexed_project(state, project, index, {path: a.summary for path, (_, a) in edits.items()})
            if lazy is None:
                return None
            change, links = Change(frozenset(), frozenset(), frozenset()), None
            if moved_summaries:
                table: LinkTable | None = index.cache.load_value(state.links, LinkTable) if state.links else None
                found = self._change(moved_summaries, state, lazy, table) if table is not None else None
                if found is None or table is None:
                    return None
                change, links = found, merged_links(table, found, list(moved_summaries.values()), lazy)
            base = lazy.summaries({*change.modules, *(project[path].module.name for path in moved_summaries)})
            for path, (old, analysis) in edits.items():
                references = recorded[path].references
                if path in moved_summaries:
                    references = tuple(sorted(referenced_names(analysis.summary, lazy.overriding(analysis.summary).visited)))
                final = self._relinted(analysis, recorded[path], change.functions, references, base, lazy, keys,
                                       index, project)
                if final is None:
                    return None
                finals[path] = final
            reached = self._reached_files(state, change, base, citing, lazy, keys, index, project, edits.keys(),
                                          MAX_CUTOFF_FILES - len(edits))
            if reached is None:
                return None
            finals.update(reached)
        except Exception:
            return None
        files = tuple(finals.get(Path(file.path), file) for file in state.files)
        if finals:
            index.store_state(state_key, replace(state, files=files, traced=self.traced), links)
        return [diagnostic for file in files for diagnostic in file.diagnostics]

    def _indexed_project(self, state: RunState, project: dict[Path, ProjectFile], index: ProjectIndex,
                         edited: dict[Path, ModuleSummary]) -> LazyProject | None:
        """The modules the recorded solve had (its checked files and importers, in the solve's order),
        each summary read from the index when a lookup needs it, or taken from `edited` (the files
        changed since, as they are now); None when a solved file is no longer in the project."""
        owners = {file.path: file.own_key for file in state.files}
        by_module: dict[str, list[Path]] = {}
        for solved in (*owners, *state.importers):
            if Path(solved) not in project:
                return None
            by_module.setdefault(project[Path(solved)].module.name, []).append(Path(solved))

        def loader(path: Path) -> Callable[[], ModuleSummary | None]:
            def load() -> ModuleSummary | None:
                if path in edited:
                    return edited[path]
                if str(path) in owners:
                    entry = index.cache.load(owners[str(path)])
                    return entry.summary if entry is not None else None
                return index.load_summary(project[path], self.linter.summary_settings(path))
            return load

        shared = frozenset(module for module, paths in by_module.items() if len(paths) > 1)
        return LazyProject({module: loader(paths[0]) for module, paths in by_module.items()}, shared)

    @staticmethod
    def _change(moved: dict[Path, tuple[ModuleSummary, ModuleSummary]], state: RunState, lazy: LazyProject,
                table: LinkTable) -> Change | None:
        """What the changes of the summaries of the `moved` files (each from old to new) may alter in the
        recorded solve (see :func:`.locality.changed_functions`); None when a solve of part of the project
        cannot tell (Unresolvable when a module the lookups need cannot be read)."""
        paths = {str(path) for path in moved}
        elsewhere = {name for file in state.files if file.path not in paths for name in file.references}
        elsewhere.update(state.importer_references)
        before = after = lazy
        for old, new in moved.values():
            before, after = before.overriding(old), after.overriding(new)
        change = changed_functions(list(moved.values()), before.resolve, after.resolve, table, elsewhere)
        if change is None or not change.modules.isdisjoint(lazy.shared):  # the solve's merge order decides those
            return None
        for _, new in moved.values():
            if any(after.defined_elsewhere(key, new.module) for key in change.functions & new.functions.keys()):
                return None
        return change

    def _reached_files(self, state: RunState, change: Change, base: list[ModuleSummary], citing: set[Path],
                       lazy: LazyProject, keys: dict[Path, str], index: ProjectIndex, project: dict[Path, ProjectFile],
                       edited: Iterable[Path], most: int) -> dict[Path, FileState] | None:
        """The new states of the unchanged checked files that a `change` (solved again with `base`) or
        the edits reach, linted again (see :meth:`_relinted`): those whose notes cite an edited file
        (`citing`: where the notes land moved), and those of the modules the change reaches whose
        signatures' parts about the changed functions are not as recorded. The others keep their
        states. None when one fails or cannot be linted so, or more than `most` would be linted."""
        solution = lazy.solve(base) if change.modules else None
        if solution is not None and not solution.converged:
            return None
        summaries = {summary.module: summary for summary in base}
        reached: list[tuple[FileState, ModuleSummary | None]] = []
        for file in state.files:
            path = Path(file.path)
            summary = summaries.get(project[path].module.name)
            if path in edited or ((summary is None or summary.path != file.path) and path not in citing):
                continue
            if path not in citing and solution is not None and summary is not None:
                now = {key: digest for key, digest in part_digests(solution.signature_parts(summary))
                       if key in change.functions}
                if now == {key: digest for key, digest in file.parts if key in change.functions}:
                    continue
            reached.append((file, summary))
        if len(reached) > most:
            return None  # too many to lint one by one
        finals: dict[Path, FileState] = {}
        for file, summary in reached:
            path = Path(file.path)
            analysis = self.linter.analyze(file.path, project[path].data, project[path].module)
            if isinstance(analysis, FileOutcome) or (summary is not None and analysis.summary != summary):
                return None
            final = self._relinted(analysis, file, change.functions, file.references, base, lazy, keys, index,
                                   project, own_entry=False)
            if final is None:
                return None
            finals[path] = final
        return finals

    def _relinted(self, analysis: Analysis, recorded: FileState, touched: frozenset[str], references: tuple[str, ...],
                  base: list[ModuleSummary], lazy: LazyProject, keys: dict[Path, str], index: ProjectIndex,
                  project: dict[Path, ProjectFile], own_entry: bool = True) -> FileState | None:
        """The new state of a file (whose summary makes the solve look up `references`), linted with the
        smallest solve that gives it the recorded parts of its signature except those of the `touched`
        functions, which a change may alter: with `base` (the modules a solve of those needs) and the
        modules it names (read through `lazy`), else with its importers too. None when the file fails
        or neither solve gives those parts. With `own_entry` (a changed file), its own entry is stored:
        the lint with its own solve (the first pass of a whole run)."""
        path = Path(analysis.display_path)
        expected = {key: digest for key, digest in recorded.parts if key not in touched}

        def matching_parts(solution: Solution) -> tuple[tuple[str, str], ...] | None:
            parts = part_digests(solution.signature_parts(analysis.summary))
            kept = {key: digest for key, digest in parts if key not in touched}
            return parts if solution.converged and kept == expected else None

        alone = solve([analysis.summary])
        own = self.linter.lint(analysis, alone) if own_entry else None
        try:
            named = lazy.named_summaries(analysis.summary)
        except Unresolvable:  # a module name several files share: the parts decide without them
            named = []
        extra = [summary for summary in (*base, *named) if summary.module != analysis.summary.module]
        if extra or not lazy.modules.keys().isdisjoint(analysis.summary.functions):
            solution = lazy.solve([*extra, analysis.summary])
        else:  # its own solve is the same (it knows of no function keyed like another module)
            solution = alone
        parts = matching_parts(solution)
        if parts is None:
            others = {other: file for other, file in project.items() if other != path}
            importers = self.linter.indexed_importer_summaries(index, others, {path: project[path].module}, keys)
            solution = lazy.solve([*extra, *importers, analysis.summary])
            parts = matching_parts(solution)
            if parts is None:
                return None
        outcome = own if solution is alone and own is not None else self.linter.lint(analysis, solution)
        if outcome.errors or (own is not None and own.errors):
            return None
        if own is not None:
            index.cache.store(keys[path], FileOutcome(own.diagnostics, [], analysis.summary, own.signature, (),
                                                      own.reads))
        return FileState(str(path), project[path].digest, keys[path], tuple(outcome.diagnostics),
                         tuple(cited for cited, _ in outcome.cited), parts, references)


def run_state(outcomes: dict[Path, FileOutcome], checked: dict[Path, ProjectFile], keys: dict[Path, str],
               importer_summaries: list[ModuleSummary], solution: Solution,
               parts: dict[Path, SignatureParts]) -> RunState:
    """The state of a complete run: per checked file its digest, own key (in `keys`), findings, the
    files their notes cite, its signature's parts in `solution` (computed unless in `parts`) and the
    names its summary looks up; the importers solved with them and their names. (Its link table is
    stored apart: see :func:`solved_links`.)"""
    def visit(name: str) -> list[str]:
        return lookup_name(solution, name)[1]

    states = []
    for path, outcome in outcomes.items():
        summary = outcome.summary
        pieces = parts.get(path) or (solution.signature_parts(summary) if summary is not None else None)
        states.append(FileState(
            str(path), checked[path].digest, keys[path], tuple(outcome.diagnostics),
            tuple(cited for cited, _ in outcome.cited), part_digests(pieces) if pieces is not None else (),
            tuple(sorted(referenced_names(summary, visit))) if summary is not None else ()))
    importer_names = set().union(*(referenced_names(summary, visit) for summary in importer_summaries))
    return RunState(tuple(states), tuple(summary.path for summary in importer_summaries),
                    tuple(sorted(importer_names)), solution.converged)


def solved_links(summaries: list[ModuleSummary], solution: Solution) -> LinkTable:
    """The groups of linked functions of `solution`, the solve of `summaries` (see :class:`LinkTable`)."""
    return link_table(summaries, lambda name: lookup_name(solution, name), solution.functions)


def part_digests(parts: SignatureParts) -> tuple[tuple[str, str], ...]:
    """A digest per function's pieces of a signature (its facts and chains, its links), and one for
    64-bit mode (key MODULE_PART)."""
    keys = sorted(parts.functions.keys() | parts.links.keys())
    return ((MODULE_PART, hash_parts(str(parts.x64))),
            *((key, hash_parts(*parts.functions.get(key, ("", "")), parts.links.get(key, ""))) for key in keys))
