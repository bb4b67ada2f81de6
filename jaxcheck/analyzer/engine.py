"""The engine: one pipeline per file, and the project-wide solve that links files.

Per file: read and decode once, parse once (:mod:`.parsing`), one traversal that builds the semantic
model (:class:`ModelBuilder`), all enabled rules in one batched traversal (:class:`RuleWalker`),
positions only for reported nodes, then suppression.

Across files: each file is first linted with what it knows alone, so its syntax tree can be dropped
at once. Then every summary (plus those of project modules that import the checked ones) is solved
together; the few files whose functions turn out traced differently are linted again.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from jaxcheck.analyzer.cache import ResultCache, content_digest, fingerprint
from jaxcheck.analyzer.config import ConfigError, Configuration, ConfigResolver, Settings, per_file_ignores_of
from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, FileError, Fix, Position, Range, RelatedLocation
from jaxcheck.analyzer.discovery import FileFinder
from jaxcheck.analyzer.files import read_file, real_path
from jaxcheck.analyzer.incremental import EarlyCutoff, run_state, solved_links
from jaxcheck.analyzer.index import ProjectFile, ProjectIndex, WholeRun, importers, project_file
from jaxcheck.analyzer.noqa import UNUSED_NOQA_CODE, unused_noqa
from jaxcheck.analyzer.notebooks import Notebook, NotebookError, in_cells, is_notebook, read_notebook
from jaxcheck.analyzer.outcome import Analysis, FileOutcome
from jaxcheck.analyzer.parallel import Checker, FileTask
from jaxcheck.analyzer.progress import Progress
from jaxcheck.analyzer.project import (
    ModuleName, Stamp, common_folder, imported_modules, module_name_for, project_root, project_texts,
)
from jaxcheck.analyzer.registry import selected_codes
from jaxcheck.analyzer.semantics.locality import named_elsewhere
from jaxcheck.analyzer.semantics.solver import MAX_ROUNDS, SignatureParts, Solution, findings_part, solve
from jaxcheck.analyzer.semantics.summary import ModuleSummary
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, encode_source, source_lines
from jaxcheck.analyzer.stack import run_with_deep_stack
from jaxcheck.analyzer.suppression import Suppressions
from jaxcheck.version import __version__

if TYPE_CHECKING:  # these load LibCST: imported where a file is parsed, never on a run the index answers
    import libcst as cst
    from libcst.metadata import CodeRange

    from jaxcheck.analyzer.reparse import ChunkedParse
    from jaxcheck.analyzer.rule import NodeFix, Report, Rule
    from jaxcheck.analyzer.semantics import SemanticModel
    from jaxcheck.analyzer.semantics.model import TraceNote
    from jaxcheck.analyzer.semantics.records import ModuleRecords

    _Cited = tuple[cst.Module, ModuleRecords, dict[int, CodeRange]]
    """A file trace notes cite: its tree, its records and the ranges of the sites notes may cite."""

SYNTAX_ERROR_CODE = "JAX001"
SYNTAX_ERROR_NAME = "syntax-error"
MAX_KEPT_SOLVES = 8
"""How many files' last project solves a linter keeps for editor checks (see :meth:`Linter._solve_for`)."""


@dataclass
class CheckReport:
    """The outcome of a run: findings, files that could not be checked, how many were read, and notes
    for the user that change nothing in the result (an ignored cache entry)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """Notes for a verbose run (`--verbose`): what the model could not follow, or that the findings were
    answered from an earlier run's record."""
    traced: bool | None = None
    """Whether the run found any function traced (by `jax.jit`, `grad`, a `lax` loop, ...); None where it
    is not known (a run answered from a cache entry without that fact)."""

    @property
    def exit_code(self) -> int:
        """0 clean, 1 findings, 2 when any file or rule failed."""
        if self.errors:
            return 2
        return 1 if self.diagnostics else 0


@dataclass(eq=False, slots=True)
class Profile:
    """What one configuration means for the files it governs: its settings and the rules they enable.
    The rule classes are imported on first use (they load LibCST): a run the project index answers
    needs only the codes."""

    configuration: Configuration
    codes: frozenset[str]
    _rules: tuple[type[Rule], ...] | None = None
    _key: str | None = None

    @property
    def rules(self) -> tuple[type[Rule], ...]:
        """The enabled rule classes, ordered by code."""
        if self._rules is None:
            from jaxcheck.analyzer.registry import all_rules

            self._rules = tuple(rule for rule in all_rules() if rule.code in self.codes)
        return self._rules

    @property
    def settings(self) -> Settings:
        """The configuration's settings."""
        return self.configuration.settings

    @property
    def key(self) -> str:
        """Identifies the settings and rules in cache keys (computed once: every file's keys use it)."""
        if self._key is None:
            self._key = f"{self.configuration.root}|{self.settings.model_dump_json()}|{','.join(sorted(self.codes))}"
        return self._key


class Linter:
    """Lints files, each with its own configuration when a resolver is given (else `configuration`
    for all). Thread-compatible, not thread-safe."""

    def __init__(self, configuration: Configuration, select: Sequence[str] | None = None,
                 ignore: Sequence[str] = (), noqa: bool = True, resolver: ConfigResolver | None = None,
                 extend_select: Sequence[str] = ()) -> None:
        """`noqa=False` leaves `# noqa` comments to the caller (flake8 applies its own). `select` and
        `ignore` (the command line's) override each configuration's `select` and add to its `ignore`;
        `extend_select` (and each configuration's `extend-select`) adds rules to what `select` chose.
        With `resolver`, each file is checked with the configuration nearest to it; `configuration`
        then holds the project-wide settings (those of the folder the run starts from)."""
        self.noqa = noqa
        self.resolver = resolver
        self._select = None if select is None else tuple(select)
        self._ignore = tuple(ignore)
        self._extend_select = tuple(extend_select)
        self._profiles: dict[tuple[Path, tuple[Path, ...]], Profile] = {}
        base = self.profile_of(configuration)
        self.configuration = configuration
        self.settings: Settings = configuration.settings
        self._base = base
        self.codes = base.codes
        self._rules: list[type[Rule]] | None = None
        self._last_solves: dict[Path, tuple[list[ModuleSummary], Solution]] = {}
        """Per file checked in a project (:meth:`check_file_in_project`), the summaries it was last solved
        with and that solve (for the MAX_KEPT_SOLVES files checked most recently)."""
        self._elsewhere: dict[tuple[str, str], tuple[str, _Cited | None]] = {}
        """Other files analysed again to locate notes that cite them, by (path, module): the digest of the
        bytes read, and the tree with its records (None: unusable)."""
        self._last_importers: dict[Path, _ImporterScan] = {}
        """Per file checked in a project, the last scan for its importers (see :meth:`_importer_summaries`),
        for the MAX_KEPT_SOLVES files checked most recently."""
        self._last_parses: dict[Path, ChunkedParse] = {}
        """Per file checked in a project, its last parse by top-level statement (see :mod:`reparse`), for
        the MAX_KEPT_SOLVES files checked most recently."""

    def __getstate__(self) -> dict[str, object]:
        """What a worker process receives: the linter without this process's caches (solves, trees)."""
        return {**self.__dict__, "_last_solves": {}, "_elsewhere": {}, "_last_importers": {}, "_last_parses": {}}

    @property
    def rules(self) -> list[type[Rule]]:
        """The rule classes the run's own configuration enables, imported on first use (they load LibCST)."""
        if self._rules is None:
            self._rules = list(self._current_base().rules)
        return self._rules

    @rules.setter
    def rules(self, rules: list[type[Rule]]) -> None:
        self._rules = rules

    def profile_of(self, configuration: Configuration) -> Profile:
        """The rules `configuration` enables under this run's command-line selection."""
        key = (configuration.root, configuration.sources)
        profile = self._profiles.get(key)
        if profile is None or profile.configuration is not configuration:
            settings = configuration.settings
            select = self._select if self._select is not None else settings.select
            ignored = (*settings.ignore, *self._ignore)
            extend = (*settings.extend_select, *self._extend_select)
            codes = frozenset(selected_codes(select, ignored) | (selected_codes(extend, ignored) if extend else set()))
            profile = Profile(configuration, codes)
            self._profiles[key] = profile
        return profile

    def profile(self, path: str | Path) -> Profile:
        """The profile of the file at `path`."""
        configuration = self.configuration if self.resolver is None else self.resolver.for_path(Path(path))
        if configuration is not self.configuration:
            return self.profile_of(configuration)
        return self._current_base()

    def _current_base(self) -> Profile:
        """The profile of the run's own configuration, following `codes` and `rules` when they were
        swapped in after construction (tests do); the rules are not imported unless they were."""
        base = self._base
        swapped = self._rules is not None and tuple(self._rules) != base.rules
        if swapped or base.codes != self.codes:
            rules = tuple(self._rules) if self._rules is not None else None
            base = self._base = Profile(self.configuration, frozenset(self.codes), rules)
        return base

    # -------------------------------------------------------------------------------- one file
    def analyze(self, display_path: str, data: bytes, module: ModuleName,
                edited: Path | None = None) -> Analysis | FileOutcome:
        """Decode, parse and model one file; an FileOutcome with JAX001 or an error when that fails.
        `edited`: the file is a buffer checked again on every edit (a Python file, not a notebook): its
        last parse is kept, and its unchanged top-level statements reused (see :mod:`reparse`)."""
        from jaxcheck.analyzer.parsing import ParseFailure, parse_source
        from jaxcheck.analyzer.reparse import parse_reusing
        from jaxcheck.analyzer.semantics.builder import ModelBuilder

        notebook = None
        try:
            if is_notebook(display_path):
                notebook = read_notebook(data)
                text = notebook.text
                if "\x00" in text:  # as in a Python file (a JSON escape put it there)
                    line = text[: text.index("\x00")].count("\n") + 1
                    raise SourceDecodeError("binary file: source contains a NUL byte", line)
            else:
                text = decode_source(data).text
        except NotebookError as exc:
            return self.failed(display_path, str(exc))
        except SourceDecodeError as exc:
            failure = self._syntax_error(display_path, str(exc), exc.line, 0, "")
            if notebook is not None:
                failure.diagnostics = in_cells(failure.diagnostics, notebook.index)
            return failure
        if edited is not None and notebook is None:
            parsed, kept = parse_reusing(text, self._last_parses.pop(edited, None))
            if kept is not None:
                self._last_parses[edited] = kept
                while len(self._last_parses) > MAX_KEPT_SOLVES:  # the least recently parsed files go first
                    del self._last_parses[next(iter(self._last_parses))]
        else:
            parsed = parse_source(text)
        if isinstance(parsed, ParseFailure) and parsed.valid:
            return self.failed(display_path, f"cannot analyze line {parsed.line}: {parsed.message}")
        if isinstance(parsed, ParseFailure):
            error = (parsed.message, parsed.line, parsed.column)
            if notebook is not None:  # where the kernel sees it: in the cell alone (or the one before)
                error = notebook.cell_syntax_error(parsed.line) or error
            return self._syntax_failure(display_path, error, text, notebook)
        if notebook is not None and (error_in_cell := notebook.cell_syntax_error()) is not None:  # (cells run alone)
            return self._syntax_failure(display_path, error_in_cell, text, notebook)
        decorators = self.profile(display_path).settings.extra_jit_decorators
        builder = ModelBuilder(module.name, display_path, decorators, module.package)
        try:
            records, summary = builder.build(parsed)
        except RecursionError:
            return FileOutcome([], [FileError(display_path, "too deeply nested to analyze; file skipped")])
        return Analysis(display_path, text, parsed, records, replace(summary, digest=content_digest(data)),
                        notebook.index if notebook is not None else None)

    def lint(self, analysis: Analysis, solution: Solution) -> FileOutcome:
        """Run the enabled rules over an analysed file with a solved project state."""
        from jaxcheck.analyzer.rule import RuleContext
        from jaxcheck.analyzer.semantics import SemanticModel
        from jaxcheck.analyzer.walker import RuleWalker

        profile = self.profile(analysis.display_path)
        ignored = self.per_file_ignores(analysis.display_path, profile)
        model = SemanticModel(analysis.module, analysis.records, analysis.summary, solution)
        context = RuleContext(analysis.display_path, model)
        rules = [rule(context) for rule in profile.rules if not (ignored and rule.code.startswith(ignored))]
        walker = RuleWalker(rules, context)
        errors = list(walker.errors)
        try:
            walker.walk(analysis.module)
        except RecursionError:
            errors.append(FileError(analysis.display_path, "too deeply nested to analyze; file skipped"))
            return FileOutcome([], errors)
        errors.extend(walker.errors)
        diagnostics = _located(analysis.display_path, model, _outside_cuts(context.reports, analysis.records),
                               lambda note: self._locate_elsewhere(note, solution.digests.get(note.path, "")))
        if self.noqa:
            if UNUSED_NOQA_CODE in profile.codes:  # JAX002 needs every finding, before suppression
                diagnostics += unused_noqa(analysis.display_path, analysis.text, diagnostics,
                                           [rule.code for rule in rules])
            diagnostics = Suppressions.scan(source_lines(analysis.text)).filter(diagnostics)
        if analysis.notebook is not None:
            diagnostics = in_cells(diagnostics, analysis.notebook)
        cited = sorted({(note.path, solution.digests.get(note.path, "")) for diagnostic in diagnostics
                        for note in diagnostic.related if note.path is not None and note.path != analysis.display_path})
        reads = tuple(sorted(model.reads))
        return FileOutcome(diagnostics, errors, analysis.summary, solution.lint_signature(analysis.summary, reads),
                           tuple(cited), reads)

    def check_file(self, display_path: str, data: bytes, module: ModuleName,
                   solution: Solution | None = None) -> FileOutcome:
        """Analyse and lint one file; without `solution`, solve it on its own."""
        analysis = self.analyze(display_path, data, module)
        if isinstance(analysis, FileOutcome):
            return analysis
        return self.lint(analysis, solution if solution is not None else solve([analysis.summary]))

    def check_isolated(self, display_path: str, data: bytes, module: ModuleName,
                       solution: Solution | None = None) -> FileOutcome:
        """:meth:`check_file`, :meth:`isolated`."""
        return self.isolated(display_path, lambda: self.check_file(display_path, data, module, solution))

    def isolated(self, display_path: str, work: Callable[[], FileOutcome]) -> FileOutcome:
        """`work` (on the file at `display_path`) on a deep stack with the cyclic collector paused, for
        a worker process; any exception becomes the file's error instead of propagating."""
        try:
            with acyclic_allocations():
                return run_with_deep_stack(work)
        except Exception as exc:
            return self.failed(display_path, f"internal error: {type(exc).__name__}: {exc}")

    @staticmethod
    def failed(display_path: str, message: str) -> FileOutcome:
        """The outcome of a file that could not be checked."""
        return FileOutcome([], [FileError(display_path, message)])

    def _syntax_failure(self, path: str, error: tuple[str, int, int], text: str, notebook: Notebook | None,
                        ) -> FileOutcome:
        """JAX001 at `error` (message, line, column), in its cell for a notebook."""
        failure = self._syntax_error(path, *error, text)
        if notebook is not None:
            failure.diagnostics = in_cells(failure.diagnostics, notebook.index)
        return failure

    def _syntax_error(self, path: str, message: str, line: int, column: int, text: str) -> FileOutcome:
        profile = self.profile(path)
        ignored = self.per_file_ignores(path, profile)
        if SYNTAX_ERROR_CODE not in profile.codes or (ignored and SYNTAX_ERROR_CODE.startswith(ignored)):
            return FileOutcome([], [])
        start = Position(line, column)
        diagnostic = Diagnostic(path, Range(start, start), SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, message)
        if not self.noqa:
            return FileOutcome([diagnostic], [])
        return FileOutcome(Suppressions.scan(source_lines(text)).filter([diagnostic]), [])

    def _locate_elsewhere(self, note: TraceNote, digest: str) -> Range | None:
        """Where a note that cites another file lies, in that file as it was solved (content `digest`;
        "" when unknown): the file is read and analysed once per process and content (only for findings
        whose trace chain crosses files); None when it cannot be found (the file changed since it was
        solved, is unreadable, or no longer has the site)."""
        from jaxcheck.analyzer.positions import node_ranges
        from jaxcheck.analyzer.semantics.model import site_in

        key = (note.path, note.module)
        known = self._elsewhere.get(key)
        if known is None or (digest and known[0] != digest):
            known = self._elsewhere[key] = self._reanalyzed(note.path, note.module)
        if digest and known[0] != digest:
            return None
        found = known[1]
        node = site_in(found[1], note) if found is not None else None
        if found is None or node is None:
            return None
        tree, records, ranges = found
        if not ranges:  # every site a note may cite, in one pass over the file (not one per note)
            sites = [*records.root_sites.values(), *(site for _, site in records.edge_sites)]
            ranges.update(node_ranges(tree, sites))
        where = ranges.get(id(node))
        if where is None:
            return None
        return Range(Position(where.start.line, where.start.column), Position(where.end.line, where.end.column))

    def _reanalyzed(self, display_path: str, module: str) -> tuple[str, _Cited | None]:
        """The digest of the file's bytes ("" when unreadable) and its tree with its records, if usable
        (with the ranges of the sites notes cite, filled on first use)."""
        from jaxcheck.analyzer.parsing import ParseFailure, parse_source
        from jaxcheck.analyzer.semantics.builder import ModelBuilder

        try:
            data = read_file(Path(display_path))
            text = decode_source(data).text
        except OSError:
            return "", None
        except SourceDecodeError:
            return content_digest(data), None
        parsed = parse_source(text)
        if isinstance(parsed, ParseFailure):
            return content_digest(data), None
        package = module if Path(display_path).name == "__init__.py" else None
        builder = ModelBuilder(module, display_path, self.profile(display_path).settings.extra_jit_decorators, package)
        try:
            records, _ = builder.build(parsed)
        except RecursionError:
            return content_digest(data), None
        return content_digest(data), (parsed, records, {})

    @staticmethod
    def per_file_ignores(display_path: str, profile: Profile) -> tuple[str, ...]:
        """The codes and prefixes `profile`'s per-file-ignores turn off in the file at `display_path`."""
        table = profile.settings.per_file_ignores
        if not table:
            return ()
        path = real_path(Path(display_path))
        try:
            relative = path.relative_to(profile.configuration.per_file_ignores_root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return per_file_ignores_of(profile.settings).codes(relative, path.name)

    def force_excluded(self, path: Path) -> bool:
        """Whether the excludes or `.gitignore` of `path`'s project skip it even when it is named
        (`--force-exclude`); `path` need not exist (an editor's `--stdin-filename`)."""
        return not any(True for _ in self._finder(project_root(path)).files([path], force_exclude=True))

    # ------------------------------------------------------------------------------ many files
    def check_paths(self, paths: Sequence[Path], *, force_exclude: bool = False, jobs: int = 1,
                    cache_dir: Path | None = None, progress: Progress | None = None) -> CheckReport:
        """Check files and folders, linking them (and their importers) through the project solve.

        With `force_exclude`, excludes and `.gitignore` apply to files named in `paths` as well.
        `jobs` > 1 checks files in that many worker processes (same results as in-process);
        `cache_dir` reuses and stores per-file results there (None: no cache).
        """
        cache = self._cache(cache_dir) if cache_dir is not None else None
        with acyclic_allocations():
            return run_with_deep_stack(lambda: self._check_paths(
                paths, force_exclude=force_exclude, jobs=jobs, cache=cache, progress=progress))

    def check_file_in_project(self, path: Path, data: bytes, *, walk_max_age: float = 0.0) -> CheckReport:
        """Check one file whose current text is `data` (an editor buffer, flake8's lines), with the
        rest of the project read from disk for cross-module tracing. The file is parsed once and linted
        once, with the solve of its summary and its importers' (the results of :meth:`check_paths`).

        `walk_max_age` reuses this process's listing of the project's files while it is at most that
        many seconds old (a language server checks on every edit; a new file is seen after that delay).
        """
        with acyclic_allocations():
            return run_with_deep_stack(lambda: self._check_in_project(path, data, walk_max_age))

    def _check_in_project(self, path: Path, data: bytes, walk_max_age: float) -> CheckReport:
        root = project_root(path)
        module = module_name_for(path)
        analysis = self.analyze(str(path), data, module, edited=path)
        if isinstance(analysis, FileOutcome):
            outcome = analysis
        else:
            finder = self._finder(root)
            summaries = [analysis.summary, *self._importer_summaries(root, finder, {path: module}, walk_max_age,
                                                                     named_by=[analysis.summary])]
            solution = self._solve_for(path, summaries)
            outcome = self.lint(analysis, solution)
            return CheckReport(_deduplicated(outcome.diagnostics), list(outcome.errors), 1, traced=traces_any(solution))
        return CheckReport(_deduplicated(outcome.diagnostics), list(outcome.errors), 1)

    def _solve_for(self, path: Path, summaries: list[ModuleSummary]) -> Solution:
        """The solve of `summaries` (the file at `path`, then its importers), reused from the last check
        of that file when its summary is equal and the importers' are the same objects (unchanged on
        disk): an editor checks on every change, and most changes keep the summary."""
        last = self._last_solves.get(path)
        if last is not None and last[0][0] == summaries[0] and len(last[0]) == len(summaries) \
                and all(before is now for before, now in zip(last[0][1:], summaries[1:])):
            return last[1]
        solution = solve(summaries)
        self._last_solves.pop(path, None)
        self._last_solves[path] = (summaries, solution)
        while len(self._last_solves) > MAX_KEPT_SOLVES:  # the least recently solved files go first
            del self._last_solves[next(iter(self._last_solves))]
        return solution

    def _check_paths(self, paths: Sequence[Path], texts: dict[Path, bytes] | None = None, *,
                     force_exclude: bool = False, jobs: int = 1, cache: ResultCache | None = None,
                     progress: Progress | None = None) -> CheckReport:
        root = project_root(common_folder(paths) if paths else Path("."))
        finder = self._finder(root)
        report = CheckReport()
        texts = texts or {}
        tasks: dict[Path, FileTask] = {}
        for path in finder.files(paths, force_exclude):
            data = texts[path] if path in texts else _read(path, report)
            if data is not None:
                tasks[path] = FileTask(str(path), data, module_name_for(path))
        report.files_checked = len(tasks)
        report.notes.extend(finder.notes)  # before the importer scan, which walks folders not given
        index = ProjectIndex(cache, root) if cache is not None else None
        checked = {path: project_file(Path(t.display_path), t.module, t.data) for path, t in tasks.items()}
        others = None
        if index is not None:  # a run over the whole project has no other files to read
            whole = any(path.is_dir() and real_path(path) == root for path in paths)
            others = {} if whole else self._project_files(root, finder, tasks)
        run_key = state_key = None
        keys = {path: cache.key(t.display_path, f"{t.module!r}|{self.profile(path).key}", t.data, checked[path].digest)
                for path, t in tasks.items()} if cache is not None else None
        if index is not None and others is not None and keys is not None and not report.errors:
            # each file's configuration is part of the request: editing a nested config changes the key
            request = sorted([*(f"{t.display_path}\0{self.profile(path).key}" for path, t in tasks.items()),
                              *(f"{path}\0{self.summary_settings(path)}" for path in others)])
            run_key = index.run_key(request, checked.values(), others.values())
            state_key = index.state_key(request, checked.values(), others.values())
            record = index.load_run(run_key)
            diagnostics = list(record.diagnostics) if record is not None else None
            traced = record.traced if record is not None else None
            if diagnostics is None and (state := index.load_state(state_key)) is not None:
                cutoff = EarlyCutoff(self)
                diagnostics = cutoff.findings(state, tasks, checked, others, index, keys, state_key)
                traced = cutoff.traced
            if diagnostics is None and others and cache is not None:
                diagnostics, traced = self._from_whole_run(index, cache, tasks, checked, others) or (None, None)
            if diagnostics is not None and not _about(diagnostics, {t.display_path for t in tasks.values()}):
                index.cache.ignored += 1
                diagnostics = None
            if diagnostics is not None:
                if progress is not None:
                    progress.start(len(tasks))
                    progress.advance(len(tasks))
                    progress.finish()
                report.diagnostics = _deduplicated(diagnostics)
                report.traced = traced
                report.details.append(ANSWERED_FROM_CACHE)
                if record is None:
                    index.store_run(run_key, report.diagnostics, traced)
                index.save()
                report.notes.extend(_ignored_entries_note(cache))
                return report
        with Checker(self, jobs, cache) as checker:
            if progress is not None:
                progress.start(len(tasks))
            try:
                outcomes = self._outcomes(checker, tasks, None, cache, keys, progress)
            finally:
                if progress is not None:
                    progress.finish()
            summaries = [o.summary for o in outcomes.values() if o.summary is not None]
            modules = {path: t.module for path, t in tasks.items()}
            if index is not None and others is not None:
                importer_summaries = self.indexed_importer_summaries(index, others, modules, named_by=summaries)
            else:
                importer_summaries = self._importer_summaries(root, finder, modules, named_by=summaries)
            summaries += importer_summaries
            solution = None
            parts: dict[Path, SignatureParts] = {}
            if len(summaries) > 1:
                solution = solve(summaries)
                if not solution.converged:
                    report.notes.append(f"note: {root}: the project solve stopped after {MAX_ROUNDS} rounds with facts "
                                        "still changing, so some findings may be missing; please report this project")
                stale: dict[Path, FileTask] = {}
                stale_keys: dict[Path, str] = {}
                for path, outcome in outcomes.items():
                    if outcome.summary is None:
                        continue
                    parts[path] = solution.signature_parts(outcome.summary)
                    signature = solution.lint_signature(outcome.summary, outcome.reads, parts[path])
                    same_findings = findings_part(signature) == findings_part(outcome.signature)
                    if signature != outcome.signature and (outcome.diagnostics or not same_findings):
                        stale[path] = tasks[path]
                        if keys is not None:
                            stale_keys[path] = ResultCache.solved_key(keys[path], parts[path].text())
                for path, outcome in self._outcomes(checker, stale, solution, cache, stale_keys, None).items():
                    outcome.summary = outcome.summary or outcomes[path].summary
                    outcomes[path] = outcome
            report.notes.extend(checker.notes)
        for outcome in outcomes.values():
            report.diagnostics.extend(outcome.diagnostics)
            report.errors.extend(outcome.errors)
            if outcome.summary is not None and outcome.summary.cut:
                report.notes.append(_cut_note(outcome.summary))
        report.diagnostics = _deduplicated(report.diagnostics)
        solution = solution or solve(summaries)
        report.traced = traces_any(solution)
        report.details.extend(_unfollowed_note(summaries))
        if index is not None:
            if run_key is not None and state_key is not None and keys is not None and not report.errors:
                index.store_run(run_key, report.diagnostics, report.traced)
                state = replace(run_state(outcomes, checked, keys, importer_summaries, solution, parts),
                                traced=report.traced)
                index.store_state(state_key, state, solved_links(summaries, solution))
                if others == {}:
                    index.store_whole_run(WholeRun(state_key, tuple(sorted(
                        (str(real_path(path)), self.profile(path).key) for path in tasks))))
            index.save()
        report.notes.extend(_ignored_entries_note(cache))
        return report

    def _from_whole_run(self, index: ProjectIndex, cache: ResultCache, tasks: dict[Path, FileTask],
                        checked: dict[Path, ProjectFile], others: dict[Path, ProjectFile],
                        ) -> tuple[list[Diagnostic], bool | None] | None:
        """The findings of the `checked` files from the state the last whole-project run left (pre-commit
        after a full check, an editor after CI restored the cache), instead of building this request's
        own project state: as recorded when no project file changed since; else through that state's
        early cutoff (see `EarlyCutoff.findings`), which updates it. None when that run is unknown, the
        project's files or configurations differ, or the cutoff cannot tell. With the findings, whether
        the run traces any function (see `EarlyCutoff.traced`)."""
        whole = index.load_whole_run()
        state = index.load_state(whole.state) if whole is not None else None
        if whole is None or state is None:
            return None
        files = {real_path(path): file for path, file in {**checked, **others}.items()}
        now = sorted((str(path), self.profile(path).key) for path in files)
        if now != list(whole.files):
            return None
        recorded = {real_path(Path(file.path)): file for file in state.files}
        if recorded.keys() != files.keys():
            return None
        wanted = {real_path(path): task.display_path for path, task in tasks.items()}
        if any(recorded[path].digest != file.digest for path, file in files.items()):
            as_recorded = {Path(recorded[path].path): file for path, file in files.items()}
            whole_tasks = {path: FileTask(str(path), file.data, file.module) for path, file in as_recorded.items()}
            keys = {path: cache.key(str(path), f"{file.module!r}|{self.profile(path).key}", file.data, file.digest)
                    for path, file in as_recorded.items()}
            cutoff = EarlyCutoff(self)
            found = cutoff.findings(state, whole_tasks, as_recorded, {}, index, keys, whole.state)
            if found is None:
                return None
            return [replace(d, path=wanted[real]) for d in found if (real := real_path(Path(d.path))) in wanted], cutoff.traced
        return [replace(d, path=wanted[path]) for path in wanted for d in recorded[path].diagnostics], state.traced

    def _outcomes(self, checker: Checker, tasks: dict[Path, FileTask], solution: Solution | None,
                  cache: ResultCache | None, keys: dict[Path, str] | None,
                  progress: Progress | None) -> dict[Path, FileOutcome]:
        """Outcomes of `tasks`, in their order: cached ones loaded, the others checked (and stored unless
        they have errors, so a crash or a failing rule is tried again next time)."""
        cached: dict[Path, FileOutcome] = {}
        digests = solution.digests if solution is not None else {}
        if cache is not None and keys is not None:
            for path in tasks:
                entry = cache.load(keys[path])
                if entry is not None and not _about(entry.diagnostics, {tasks[path].display_path}):
                    cache.ignored += 1
                elif entry is not None and all(digests.get(cited) == digest for cited, digest in entry.cited):
                    cached[path] = entry
        missing = [path for path in tasks if path not in cached]
        if progress is not None:
            progress.advance(len(cached))
        done = progress.advance if progress is not None else _nothing
        stored = [replace(tasks[path], entry_key=keys.get(path)) if cache is not None and keys is not None else tasks[path]
                  for path in missing]
        checked = dict(zip(missing, checker.check(stored, solution, done)))
        return {path: cached[path] if path in cached else checked[path] for path in tasks}

    def _finder(self, root: Path) -> FileFinder:
        """A file finder with the excludes of `root`'s configuration, or of each folder's own."""
        includes = self.settings.all_includes
        if self.resolver is None:
            return FileFinder(self.settings.all_excludes, root, includes=includes)
        resolver = self.resolver

        def excludes_for(folder: Path) -> tuple[tuple[str, ...], Path]:
            configuration = resolver.for_path(folder)
            return configuration.settings.all_excludes, configuration.root

        return FileFinder(self.settings.all_excludes, root, excludes_for, includes)

    def _cache(self, directory: Path) -> ResultCache:

        codes = sorted(self.codes)
        return ResultCache(directory, fingerprint(__version__, self.settings.model_dump_json(), codes, self.noqa))

    def _importer_summaries(self, root: Path, finder: FileFinder, checked: dict[Path, ModuleName],
                            walk_max_age: float = 0.0, named_by: Sequence[ModuleSummary] = ()) -> list[ModuleSummary]:
        """Summaries of project modules outside the checked set that import a checked module, of the
        `conftest.py` files pytest loads before a checked file (they may enable x64 for it), and of the
        modules whose functions the summaries `named_by` name (see :func:`named_elsewhere`). Texts and
        summaries are kept per process while files are unchanged, so checking many files one by one
        (flake8, pre-commit) reads the project once; and for one checked file, the last answer is reused
        while no project file changed and `named_by` is equal (an editor's edit that keeps the summary)."""
        known = {real_path(path) for path in checked}
        texts = project_texts(p for p in _project_listing(root, finder.around(ConfigError), walk_max_age) if p not in known)
        scan_key = next(iter(known)) if len(known) == 1 else None
        last = self._last_importers.get(scan_key) if scan_key is not None else None
        if last is not None and last.answers(texts, named_by) and all(
                self.profile(path).settings.extra_jit_decorators == extra for path, extra in last.settings.items()):
            return list(last.summaries)  # an edit that keeps its summary, nothing else changed: the same answer
        loaded: dict[Path, tuple[str, ...]] = {}
        candidates = {}
        for path, (stamp, module, text) in texts.items():
            scanned = _IMPORTS.get(path)
            if scanned is None or scanned[0] != stamp:
                scanned = _IMPORTS[path] = (stamp, frozenset(imported_modules(text, module.package)))
            candidates[path] = (module, scanned[1])

        def load(path: Path) -> ModuleSummary | None:
            stamp, module, text = texts[path]
            key = (path, stamp, self.profile(path).settings.extra_jit_decorators)
            loaded[path] = key[2]
            summary = _IMPORTER_SUMMARIES.get(key)
            if summary is None:
                analysis = self.analyze(str(path), encode_source(text), module)
                if not isinstance(analysis, Analysis):
                    return None
                summary = _IMPORTER_SUMMARIES[key] = analysis.summary
            return summary

        found = importers((m.name for m in checked.values()), candidates)
        summaries = [summary for path in [*found, *_ancestor_conftests(known, candidates, found)]
                     if (summary := load(path)) is not None]
        modules = {path: module.name for path, (_, module, _) in texts.items()}
        found_summaries = [*summaries, *named_elsewhere(named_by, summaries, modules, load)]
        if scan_key is not None:
            self._last_importers.pop(scan_key, None)
            self._last_importers[scan_key] = _ImporterScan(texts, tuple(named_by), tuple(found_summaries), loaded)
            while len(self._last_importers) > MAX_KEPT_SOLVES:
                del self._last_importers[next(iter(self._last_importers))]
        return found_summaries


    def _project_files(self, root: Path, finder: FileFinder, tasks: dict[Path, FileTask]) -> dict[Path, ProjectFile]:
        """Every readable project file under `root` other than the checked ones, with its bytes."""
        known = {real_path(path) for path in tasks}
        files: dict[Path, ProjectFile] = {}
        for path in (real_path(p) for p in finder.around(ConfigError).files([root])):
            if path in known or path in files:
                continue
            try:
                data = read_file(path)
            except OSError:
                continue
            files[path] = project_file(path, module_name_for(path), data)
        return files

    def indexed_importer_summaries(self, index: ProjectIndex, others: dict[Path, ProjectFile],
                                    checked: dict[Path, ModuleName], own_keys: dict[Path, str] | None = None,
                                    named_by: Sequence[ModuleSummary] = ()) -> list[ModuleSummary]:
        """:meth:`_importer_summaries` through the project index: imports and summaries of unchanged
        files come from the cache folder; only new or changed importers (and ancestor `conftest.py`
        files, and named modules) are parsed. `own_keys` are the keys of the files among `others` whose
        own result entry (which holds the summary) this run has stored."""
        candidates = {}
        for path, file in others.items():
            imports = index.imports(file)
            if imports is not None:
                candidates[path] = (file.module, imports)

        def load(path: Path) -> ModuleSummary | None:
            file = others[path]
            variant = self.summary_settings(path)
            own = index.cache.load(own_keys[path]) if own_keys is not None and path in own_keys else None
            summary = own.summary if own is not None else index.load_summary(file, variant)
            if summary is None:
                analysis = self.analyze(str(path), file.data, file.module)
                if not isinstance(analysis, Analysis):
                    return None
                summary = analysis.summary
                index.store_summary(file, summary, variant)
            return summary

        found = importers((m.name for m in checked.values()), candidates)
        known = {real_path(path) for path in checked}
        summaries = [summary for path in [*found, *_ancestor_conftests(known, candidates, found)]
                     if (summary := load(path)) is not None]
        modules = {path: file.module.name for path, file in others.items()}
        return [*summaries, *named_elsewhere(named_by, summaries, modules, load)]

    def summary_settings(self, path: Path) -> str:
        """What of a file's settings its summary depends on (in the index's keys)."""
        return ",".join(self.profile(path).settings.extra_jit_decorators)


def _ancestor_conftests(checked: Iterable[Path], candidates: Iterable[Path], found: Iterable[Path]) -> list[Path]:
    """The `conftest.py` files among `candidates` (not in `found`) that pytest loads before one of the
    `checked` files (real paths): those in a folder at or above it."""
    folders = {parent for path in checked for parent in path.parents}
    seen = set(found)
    return [path for path in candidates if path.name == "conftest.py" and path.parent in folders and path not in seen]


_IMPORTER_SUMMARIES: dict[tuple[Path, Stamp, tuple[str, ...]], ModuleSummary] = {}
_IMPORTS: dict[Path, tuple[Stamp, frozenset[str]]] = {}
"""The modules each project file may import, while its stamp is unchanged (a server re-checks on every
edit: scanning the whole project's imports each time would cost more than linting the buffer)."""
_LISTINGS: dict[tuple[Path, tuple[str, ...]], tuple[float, int, list[Path]]] = {}
"""Per project root and excludes: when it was walked, the generation it was walked in, its files."""
_listing_generation = 0


def forget_project_listings() -> None:
    """A project file was created or deleted, or a `.gitignore` changed (a language server is told so by
    its client): the next check walks its project again, even one walked within its `walk_max_age`. A
    walk that was running when this is called is not kept (its generation is over)."""
    global _listing_generation
    _listing_generation += 1


def _project_listing(root: Path, finder: FileFinder, max_age: float) -> list[Path]:
    """The real paths of every project file under `root`, walked again when the last walk with the same
    excludes is older than `max_age` seconds (0: always) or older than the last
    :func:`forget_project_listings`."""
    key = (root, finder.excludes)
    known = _LISTINGS.get(key)
    now = time.monotonic()
    generation = _listing_generation
    if known is not None and now - known[0] <= max_age and known[1] == generation:
        return known[2]
    listing = [real_path(path) for path in finder.files([root])]
    _LISTINGS[key] = (now, generation, listing)
    return listing


# ---------------------------------------------------------------------------------- module API
def check_paths(paths: Sequence[Path | str], configuration: Configuration | None = None,
                select: Sequence[str] | None = None, ignore: Sequence[str] = ()) -> CheckReport:
    """Check files and folders with `configuration` (default settings when None)."""
    linter = Linter(configuration or Configuration(), select, ignore)
    return linter.check_paths([Path(p) for p in paths])


def check_source(source: str | bytes, path: str = "<source>", settings: Settings | None = None,
                 module: str = "snippet") -> CheckReport:
    """Check one source text as module `module` (no project around it)."""
    linter = Linter(Configuration(settings=settings or Settings()))
    data = source.encode() if isinstance(source, str) else source
    name = ModuleName(module, module.rpartition(".")[0])
    with acyclic_allocations():
        outcome = run_with_deep_stack(lambda: linter.check_file(path, data, name))
    return CheckReport(_deduplicated(outcome.diagnostics), outcome.errors, 1)


# ------------------------------------------------------------------------------------- helpers
@contextmanager
def acyclic_allocations() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while checking.

    Syntax trees, model records and summaries are acyclic, so reference counting frees them; but the
    millions of container objects a run allocates make every generational collection rescan the
    long-lived summaries (measured: about a third of a corpus run). The previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _nothing() -> None:
    pass


ANSWERED_FROM_CACHE = ("note: the findings were answered from the record of an earlier run of these files; "
                       "`--no-cache` checks them again and says what that run could not follow")


def _unfollowed_note(summaries: Iterable[ModuleSummary], shown: int = 5) -> list[str]:
    """The note, said once per run, naming the project's jit wrappers the model cannot follow (see
    `ModuleSummary.unfollowed`)."""
    wrappers = sorted({key for summary in summaries for key in summary.unfollowed})
    if not wrappers:
        return []
    names = ", ".join(f"`{key}`" for key in wrappers[:shown]) + (f" and {len(wrappers) - shown} more"
                                                                 if len(wrappers) > shown else "")
    plural = len(wrappers) > 1
    return [f"note: jaxcheck cannot follow {'these wrappers' if plural else 'the wrapper'} {names}: "
            f"{'each applies' if plural else 'it applies'} `jax.jit` (or another caching transform) to a callable "
            "made from its parameter in a way the model does not read, so the functions passed to it are not "
            f"checked as traced; name {'them' if plural else 'it'} in `extra-jit-decorators` if "
            f"{'they jit' if plural else 'it jits'} what {'they are' if plural else 'it is'} given"]


def traces_any(solution: Solution) -> bool:
    """Whether the solve found any function traced (by any transform)."""
    return any(state.transforms for state in solution.states.values())


def _ignored_entries_note(cache: ResultCache | None) -> list[str]:
    """The note that a run ignored unusable cache entries, if it did."""
    if cache is None or not cache.ignored:
        return []
    return [f"{cache.directory}: note: ignored {cache.ignored} unusable cache entr"
            f"{'y' if cache.ignored == 1 else 'ies'} (unreadable, corrupt, from another version or signed with "
            "another key); the files were checked again"]


def _about(diagnostics: Iterable[Diagnostic], paths: Collection[str]) -> bool:
    """Whether every finding is in one of the files at `paths` (the request's display paths): cached
    findings about any other file are not believed, as output and fixes read and write the files
    findings name."""
    return all(diagnostic.path in paths for diagnostic in diagnostics)


def _read(path: Path, report: CheckReport) -> bytes | None:
    try:
        return read_file(path)
    except OSError as exc:
        report.errors.append(FileError(str(path), f"cannot read: {exc.strerror or exc}"))
        return None


@dataclass(frozen=True, slots=True)
class _ImporterScan:
    """One scan for a checked file's importers: the project texts it read (the per-process entries of
    :func:`project_texts`, one object per unchanged file), the summaries whose names it followed, the
    summaries it found and the settings they were read with. Work to reuse it: one identity test per
    project file, one summary comparison and one settings lookup per summary found."""

    texts: dict[Path, tuple[Stamp, ModuleName, str]]
    named_by: tuple[ModuleSummary, ...]
    summaries: tuple[ModuleSummary, ...]
    settings: dict[Path, tuple[str, ...]]
    """The `extra-jit-decorators` each summarized file was read with (its configuration may change)."""

    def answers(self, texts: dict[Path, tuple[Stamp, ModuleName, str]], named_by: Sequence[ModuleSummary]) -> bool:
        """Whether a scan of `texts` following `named_by` finds what this one found: no project file
        changed (the same entry objects) and the followed summaries are equal."""
        return (len(texts) == len(self.texts) and all(self.texts.get(path) is entry for path, entry in texts.items())
                and tuple(named_by) == self.named_by)


def _cut_note(summary: ModuleSummary) -> str:
    """The note that names the functions of a file whose work budget ran out."""
    names = ", ".join(f"`{key.removeprefix(summary.module + '.') or key}`" for key in summary.cut)
    return (f"note: {summary.path}: the analysis of {names} ran out of its work budget, so nothing is reported "
            "there; please report this file to jaxcheck")


def _outside_cuts(reports: list[Report], records: ModuleRecords) -> list[Report]:
    """The reports not in a function whose work budget ran out (its facts are unknown: silence)."""
    if not records.cut_nodes:
        return reports
    from jaxcheck.analyzer.semantics.records import cut_region

    inside = {id(node) for cut in records.cut_nodes for node in cut_region(cut)}
    return [report for report in reports if id(report.node) not in inside]


def _located(path: str, model: SemanticModel, reports: Iterable[Report],
             elsewhere: Callable[[TraceNote], Range | None] = lambda note: None) -> list[Diagnostic]:
    """Turn reports into diagnostics; positions are computed once per file, only when needed. Notes
    that cite another file are located by `elsewhere` (dropped when it finds nothing)."""

    def range_of(node: cst.CSTNode) -> Range:
        code_range = model.position(node)
        start = Position(code_range.start.line, code_range.start.column)
        return Range(start, Position(code_range.end.line, code_range.end.column))

    def text_fix(fix: NodeFix) -> Fix:
        edits = tuple(Edit(range_of(node), content) for node, content in fix.replacements)
        return Fix(edits, fix.applicability, fix.title)

    def note(trace_note: TraceNote) -> RelatedLocation | None:
        node = model.site_of(trace_note)
        if node is not None:
            return RelatedLocation(trace_note.message, range_of(node))
        where = None if trace_note.path == model.summary.path else elsewhere(trace_note)
        return RelatedLocation(trace_note.message, where, trace_note.path) if where is not None else None

    reports = list(reports)
    here = (model.site_of(n) for r in reports for n in r.trace_notes)
    model.locate([*(r.node for r in reports), *(n for r in reports if r.fix for n, _ in r.fix.replacements),
                  *(n for r in reports for _, n in r.related_nodes), *(n for n in here if n is not None)])
    diagnostics = []
    for report in reports:
        fix = text_fix(report.fix) if report.fix is not None else None
        chain = (note(n) for n in report.trace_notes)
        related = (*(n for n in chain if n is not None),
                   *(RelatedLocation(message, range_of(node)) for message, node in report.related_nodes))
        diagnostics.append(Diagnostic(path, range_of(report.node), report.code, report.name, report.message, fix,
                                      related))
    return diagnostics


def _deduplicated(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(set(diagnostics))
