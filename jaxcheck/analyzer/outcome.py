"""What checking one file produces (and the analysed file in between), and what a worker needs of the
linter: shared by the engine, the early cutoff, the worker pool and the cache, so none of them imports
another."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jaxcheck.analyzer.diagnostics import Diagnostic, FileError
from jaxcheck.analyzer.notebooks import NotebookIndex
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.semantics.solver import Read, Solution
from jaxcheck.analyzer.semantics.summary import ModuleSummary

if TYPE_CHECKING:  # these load LibCST: a run the project index answers never imports them
    import libcst as cst

    from jaxcheck.analyzer.semantics.records import ModuleRecords


@dataclass(slots=True)
class FileOutcome:
    """One file's result: findings, errors, its summary and the signature of the project solve it was
    linted with, narrowed to what the lint read (see `Solution.lint_signature`; plain data: it crosses
    processes, the cache stores it as JSON)."""

    diagnostics: list[Diagnostic]
    errors: list[FileError]
    summary: ModuleSummary | None = None
    signature: str = ""
    cited: tuple[tuple[str, str], ...] = ()
    """The other files the findings' notes cite, with the content digest each had (a cached result is
    stale when one of them changed: its notes may point at moved lines)."""
    reads: tuple[Read, ...] = ()
    """What the lint asked the solve about other modules (see `SemanticModel.reads`)."""

    def entry(self, solved: bool) -> FileOutcome:
        """What the result cache stores of this outcome: all of it for a file's own lint; for a lint
        with a project solve (`solved`), its findings and what they depend on, not the summary and
        reads the file's own entry holds."""
        return FileOutcome(self.diagnostics, [], None, self.signature, self.cited) if solved else self


@dataclass(slots=True)
class Analysis:
    """A parsed file with its model records; dropped as soon as it has been linted."""

    display_path: str
    text: str
    module: cst.Module
    records: ModuleRecords
    summary: ModuleSummary
    notebook: NotebookIndex | None = None
    """How the lines of `text` map to cells, when the file is a notebook (`text` is then its code cells
    as one module, see :mod:`.notebooks`)."""


class FileLinter(Protocol):
    """The part of the linter that checks single files (what worker processes run)."""

    def analyze(self, display_path: str, data: bytes, module: ModuleName) -> Analysis | FileOutcome:
        """Decode, parse and model one file; its outcome when that fails."""

    def lint(self, analysis: Analysis, solution: Solution) -> FileOutcome:
        """Run the enabled rules over an analysed file with a solved project state."""

    def check_file(self, display_path: str, data: bytes, module: ModuleName,
                   solution: Solution | None = None) -> FileOutcome:
        """Analyse and lint one file; without `solution`, solve it on its own."""

    def isolated(self, display_path: str, work: Callable[[], FileOutcome]) -> FileOutcome:
        """`work` (on the file at `display_path`) with any exception turned into the file's error."""

    def failed(self, display_path: str, message: str) -> FileOutcome:
        """The outcome of a file that could not be checked."""
