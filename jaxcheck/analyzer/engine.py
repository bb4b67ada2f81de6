"""The engine: one pipeline per file, and the project-wide solve that links files.

Per file: read and decode once, parse once (:mod:`.parsing`), one traversal that builds the semantic
model (:class:`ModelBuilder`), all enabled rules in one batched traversal (:class:`RuleWalker`),
positions only for reported nodes, then suppression.

Across files: each file is first linted with what it knows alone, so its syntax tree can be dropped
at once. Then every summary (plus those of project modules that import the checked ones) is solved
together; the few files whose functions turn out traced differently are linted again.
"""

from __future__ import annotations

import fnmatch
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from jaxcheck.analyzer.cache import ResultCache, fingerprint
from jaxcheck.analyzer.config import Configuration, ConfigResolver, Settings
from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, FileError, Fix, Position, Range, RelatedLocation
from jaxcheck.analyzer.discovery import FileFinder
from jaxcheck.analyzer.files import read_file, real_path
from jaxcheck.analyzer.noqa import UNUSED_NOQA_CODE, unused_noqa
from jaxcheck.analyzer.outcome import FileOutcome
from jaxcheck.analyzer.parallel import Checker, FileTask
from jaxcheck.analyzer.parsing import ParseFailure, parse_source, run_with_deep_stack
from jaxcheck.analyzer.progress import Progress
from jaxcheck.analyzer.project import (
    ModuleName, Stamp, common_folder, importers_of, module_name_for, project_root, project_texts,
)
from jaxcheck.analyzer.registry import all_rules, selected_codes
from jaxcheck.analyzer.rule import NodeFix, Report, Rule, RuleContext
from jaxcheck.analyzer.semantics import SemanticModel
from jaxcheck.analyzer.positions import node_ranges
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.model import TraceNote, site_in
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.solver import Solution, solve
from jaxcheck.analyzer.semantics.summary import ModuleSummary
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, encode_source, source_lines
from jaxcheck.analyzer.suppression import Suppressions
from jaxcheck.analyzer.walker import RuleWalker
from jaxcheck.version import __version__

SYNTAX_ERROR_CODE = "JAX001"
SYNTAX_ERROR_NAME = "syntax-error"


@dataclass
class CheckReport:
    """The outcome of a run: findings, files that could not be checked, how many were read, and notes
    for the user that change nothing in the result (an ignored cache entry)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 clean, 1 findings, 2 when any file or rule failed."""
        if self.errors:
            return 2
        return 1 if self.diagnostics else 0


@dataclass(slots=True)
class _Analysis:
    """A parsed file with its model records; dropped as soon as it has been linted."""

    display_path: str
    text: str
    module: cst.Module
    records: ModuleRecords
    summary: ModuleSummary


@dataclass(frozen=True, slots=True)
class Profile:
    """What one configuration means for the files it governs: its settings and the rules they enable."""

    configuration: Configuration
    codes: frozenset[str]
    rules: tuple[type[Rule], ...]

    @property
    def settings(self) -> Settings:
        """The configuration's settings."""
        return self.configuration.settings

    @property
    def key(self) -> str:
        """Identifies the settings and rules in cache keys."""
        return f"{self.configuration.root}|{self.settings.model_dump_json()}|{','.join(sorted(self.codes))}"


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
        self.rules = list(base.rules)
        self._elsewhere: dict[tuple[str, str], tuple[cst.Module, ModuleRecords] | None] = {}
        """Other files analysed again to locate notes that cite them, by (path, module); None: unusable."""

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
            profile = Profile(configuration, codes, tuple(rule for rule in all_rules() if rule.code in codes))
            self._profiles[key] = profile
        return profile

    def profile(self, path: str | Path) -> Profile:
        """The profile of the file at `path`."""
        configuration = self.configuration if self.resolver is None else self.resolver.for_path(Path(path))
        if configuration is not self.configuration:
            return self.profile_of(configuration)
        base = self._base
        if base.rules != tuple(self.rules) or base.codes != self.codes:  # tests swap rules in
            base = self._base = Profile(configuration, frozenset(self.codes), tuple(self.rules))
        return base

    # -------------------------------------------------------------------------------- one file
    def analyze(self, display_path: str, data: bytes, module: ModuleName) -> _Analysis | FileOutcome:
        """Decode, parse and model one file; an FileOutcome with JAX001 or an error when that fails."""
        try:
            text = decode_source(data).text
        except SourceDecodeError as exc:
            return self._syntax_error(display_path, str(exc), exc.line, 0, "")
        parsed = parse_source(text)
        if isinstance(parsed, ParseFailure) and parsed.valid:
            return self.failed(display_path, f"cannot analyze line {parsed.line}: {parsed.message}")
        if isinstance(parsed, ParseFailure):
            return self._syntax_error(display_path, parsed.message, parsed.line, parsed.column, text)
        decorators = self.profile(display_path).settings.extra_jit_decorators
        builder = ModelBuilder(module.name, display_path, decorators, module.package)
        try:
            records, summary = builder.build(parsed)
        except RecursionError:
            return FileOutcome([], [FileError(display_path, "too deeply nested to analyze; file skipped")])
        return _Analysis(display_path, text, parsed, records, summary)

    def lint(self, analysis: _Analysis, solution: Solution) -> FileOutcome:
        """Run the enabled rules over an analysed file with a solved project state."""
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
        diagnostics = _located(analysis.display_path, model, context.reports, self._locate_elsewhere)
        if self.noqa:
            if UNUSED_NOQA_CODE in self.codes:  # JAX002 needs every finding, before suppression
                diagnostics += unused_noqa(analysis.display_path, analysis.text, diagnostics,
                                           [rule.code for rule in rules])
            diagnostics = Suppressions.scan(source_lines(analysis.text)).filter(diagnostics)
        return FileOutcome(diagnostics, errors, analysis.summary, solution.signature(analysis.summary))

    def check_file(self, display_path: str, data: bytes, module: ModuleName,
                   solution: Solution | None = None) -> FileOutcome:
        """Analyse and lint one file; without `solution`, solve it on its own."""
        analysis = self.analyze(display_path, data, module)
        if isinstance(analysis, FileOutcome):
            return analysis
        return self.lint(analysis, solution if solution is not None else solve([analysis.summary]))

    def check_isolated(self, display_path: str, data: bytes, module: ModuleName,
                       solution: Solution | None = None) -> FileOutcome:
        """:meth:`check_file` on a deep stack with the cyclic collector paused, for a worker process;
        any exception becomes the file's error instead of propagating."""
        try:
            with acyclic_allocations():
                return run_with_deep_stack(lambda: self.check_file(display_path, data, module, solution))
        except Exception as exc:
            return self.failed(display_path, f"internal error: {type(exc).__name__}: {exc}")

    @staticmethod
    def failed(display_path: str, message: str) -> FileOutcome:
        """The outcome of a file that could not be checked."""
        return FileOutcome([], [FileError(display_path, message)])

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

    def _locate_elsewhere(self, note: TraceNote) -> Range | None:
        """Where a note that cites another file lies: that file is read and analysed once per process
        (only for findings whose trace chain crosses files); None when it cannot be found (the file
        changed or is unreadable)."""
        key = (note.path, note.module)
        if key not in self._elsewhere:
            self._elsewhere[key] = self._reanalyzed(note.path, note.module)
        found = self._elsewhere[key]
        node = site_in(found[1], note) if found is not None else None
        if found is None or node is None:
            return None
        where = node_ranges(found[0], [node]).get(id(node))
        if where is None:
            return None
        return Range(Position(where.start.line, where.start.column), Position(where.end.line, where.end.column))

    def _reanalyzed(self, display_path: str, module: str) -> tuple[cst.Module, ModuleRecords] | None:
        try:
            text = decode_source(read_file(Path(display_path))).text
        except (OSError, SourceDecodeError):
            return None
        parsed = parse_source(text)
        if isinstance(parsed, ParseFailure):
            return None
        package = module if Path(display_path).name == "__init__.py" else None
        builder = ModelBuilder(module, display_path, self.profile(display_path).settings.extra_jit_decorators, package)
        try:
            records, _ = builder.build(parsed)
        except RecursionError:
            return None
        return parsed, records

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
        codes: list[str] = []
        for pattern, ignored in table.items():
            if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(path.name, pattern):
                codes.extend(ignored)
        return tuple(codes)

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

    def check_file_in_project(self, path: Path, data: bytes) -> CheckReport:
        """Check one file whose current text is `data` (an editor buffer, flake8's lines), with the
        rest of the project read from disk for cross-module tracing."""
        with acyclic_allocations():
            return run_with_deep_stack(lambda: self._check_paths([path], {path: data}))

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
        keys = {path: cache.key(t.display_path, f"{t.module!r}|{self.profile(path).key}", t.data)
                for path, t in tasks.items()} if cache is not None else None
        with Checker(self, jobs) as checker:
            if progress is not None:
                progress.start(len(tasks))
            try:
                outcomes = self._outcomes(checker, tasks, None, cache, keys, progress)
            finally:
                if progress is not None:
                    progress.finish()
            summaries = [o.summary for o in outcomes.values() if o.summary is not None]
            summaries += self._importer_summaries(root, finder, {path: t.module for path, t in tasks.items()})
            if len(summaries) > 1:
                solution = solve(summaries)
                stale: dict[Path, FileTask] = {}
                stale_keys: dict[Path, str] = {}
                for path, outcome in outcomes.items():
                    if outcome.summary is None:
                        continue
                    signature = solution.signature(outcome.summary)
                    if signature != outcome.signature:
                        stale[path] = tasks[path]
                        if keys is not None:
                            stale_keys[path] = ResultCache.solved_key(keys[path], signature)
                outcomes.update(self._outcomes(checker, stale, solution, cache, stale_keys, None))
        for outcome in outcomes.values():
            report.diagnostics.extend(outcome.diagnostics)
            report.errors.extend(outcome.errors)
        report.diagnostics = _deduplicated(report.diagnostics)
        if cache is not None and cache.ignored:
            report.notes.append(f"{cache.directory}: note: ignored {cache.ignored} unusable cache entr"
                                f"{'y' if cache.ignored == 1 else 'ies'} (unreadable, corrupt or from another "
                                "version); the files were checked again")
        return report

    def _outcomes(self, checker: Checker, tasks: dict[Path, FileTask], solution: Solution | None,
                  cache: ResultCache | None, keys: dict[Path, str] | None,
                  progress: Progress | None) -> dict[Path, FileOutcome]:
        """Outcomes of `tasks`, in their order: cached ones loaded, the others checked (and stored unless
        they have errors, so a crash or a failing rule is tried again next time)."""
        cached: dict[Path, FileOutcome] = {}
        if cache is not None and keys is not None:
            for path in tasks:
                if (entry := cache.load(keys[path])) is not None:
                    cached[path] = entry
        missing = [path for path in tasks if path not in cached]
        if progress is not None:
            progress.advance(len(cached))
        done = progress.advance if progress is not None else _nothing
        checked = dict(zip(missing, checker.check([tasks[path] for path in missing], solution, done)))
        if cache is not None and keys is not None:
            for path, outcome in checked.items():
                if not outcome.errors:
                    cache.store(keys[path], outcome)
        return {path: cached[path] if path in cached else checked[path] for path in tasks}

    def _finder(self, root: Path) -> FileFinder:
        """A file finder with the excludes of `root`'s configuration, or of each folder's own."""
        if self.resolver is None:
            return FileFinder(self.settings.all_excludes, root)
        resolver = self.resolver

        def excludes_for(folder: Path) -> tuple[tuple[str, ...], Path]:
            configuration = resolver.for_path(folder)
            return configuration.settings.all_excludes, configuration.root

        return FileFinder(self.settings.all_excludes, root, excludes_for)

    def _cache(self, directory: Path) -> ResultCache:

        codes = [rule.code for rule in self.rules]
        return ResultCache(directory, fingerprint(__version__, self.settings.model_dump_json(), codes, self.noqa))

    def _importer_summaries(self, root: Path, finder: FileFinder,
                            checked: dict[Path, ModuleName]) -> list[ModuleSummary]:
        """Summaries of project modules outside the checked set that import a checked module, and of the
        `conftest.py` files pytest loads before a checked file (they may enable x64 for it). Texts and
        summaries are kept per process while files are unchanged, so checking many files one by one
        (flake8, pre-commit) reads the project once."""
        known = {real_path(path) for path in checked}
        texts = project_texts(p for p in (real_path(path) for path in finder.files([root])) if p not in known)
        candidates = {path: (module, text) for path, (_, module, text) in texts.items()}
        folders = {parent for path in known for parent in path.parents}
        conftests = [path for path in candidates if path.name == "conftest.py" and path.parent in folders]
        summaries = []
        importers = importers_of((m.name for m in checked.values()), candidates, known)
        for path in [*importers, *(c for c in conftests if c not in importers)]:
            stamp, module, text = texts[path]
            key = (path, stamp, self.profile(path).settings.extra_jit_decorators)
            summary = _IMPORTER_SUMMARIES.get(key)
            if summary is None:
                analysis = self.analyze(str(path), encode_source(text), module)
                if not isinstance(analysis, _Analysis):
                    continue
                summary = _IMPORTER_SUMMARIES[key] = analysis.summary
            summaries.append(summary)
        return summaries


_IMPORTER_SUMMARIES: dict[tuple[Path, Stamp, tuple[str, ...]], ModuleSummary] = {}


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


def _read(path: Path, report: CheckReport) -> bytes | None:
    try:
        return read_file(path)
    except OSError as exc:
        report.errors.append(FileError(str(path), f"cannot read: {exc.strerror or exc}"))
        return None


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
