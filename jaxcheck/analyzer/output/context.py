"""What a formatter may know besides the diagnostics: the checked files' lines, how notebooks' lines map
to cells, whether to colour, and what the summary needs (fixes applied, whether unsafe fixes are on,
whether to print it at all)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jaxcheck.analyzer.diagnostics import Diagnostic, Position, display_column
from jaxcheck.analyzer.files import read_file
from jaxcheck.analyzer.notebooks import NotebookError, NotebookIndex, Place, is_notebook, read_notebook
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, source_lines


@dataclass(frozen=True, slots=True)
class OutputContext:
    """`sources` maps a diagnostic's path to its lines (index 0 is line 1); `color` allows ANSI codes;
    `unsafe_fixes` makes unsafe fixes count as applicable (`[*]`); `fixed` is how many findings `--fix`
    fixed; `summary` adds ruff's footer (`Found N errors.`, `All checks passed!`) to the human formats;
    `unchecked` is how many files could not be checked (their errors are printed apart, exit code 2)."""

    sources: Mapping[str, Sequence[str]] = field(default_factory=dict)
    color: bool = False
    unsafe_fixes: bool = False
    fixed: int = 0
    summary: bool = True
    unchecked: int = 0
    notebooks: Mapping[str, NotebookIndex] = field(default_factory=dict)
    """How the lines of each notebook a finding is in map to its cells (see :mod:`..notebooks`)."""

    def place(self, path: str, position: Position) -> Place:
        """Where `position` lies in the file at `path`: in a notebook, its cell and the line within it."""
        index = self.notebooks.get(path)
        return index.place(position) if index is not None else Place(None, position.line, position.column)

    def label(self, path: str, position: Position) -> str:
        """`path:line:col` (1-based column), or `path:cell N:line:col` in a notebook, as ruff writes it."""
        place = self.place(path, position)
        cell = f"cell {place.cell}:" if place.cell is not None else ""
        return f"{path}:{cell}{place.line}:{display_column(place.column)}"


PLAIN = OutputContext()


def is_fixable(diagnostic: Diagnostic, context: OutputContext) -> bool:
    """True when `--fix` (with `--unsafe-fixes` when the context has it) would apply the diagnostic's fix."""
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == "safe" or context.unsafe_fixes)


def fix_marker(diagnostic: Diagnostic, context: OutputContext) -> str:
    """`[*] ` before the message of a fixable diagnostic, as ruff prints it."""
    return "[*] " if is_fixable(diagnostic, context) else ""


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else plural or word + 's'}"


def summary(diagnostics: Sequence[Diagnostic], context: OutputContext) -> str:
    """ruff's footer: `Found N errors.` (or `Found N errors (F fixed, R remaining).`), then
    ``[*] M fixable with the `--fix` option.`` and the hidden unsafe fixes; `All checks passed!` when
    nothing is left, nothing was fixed and every file was checked (else it says how many could not be).
    '' when `context.summary` is off."""
    if not context.summary:
        return ""
    remaining = len(diagnostics)
    unchecked = f"{_plural(context.unchecked, 'file')} could not be checked." if context.unchecked else ""
    if not remaining and not context.fixed:
        return f"No findings, but {unchecked}\n" if unchecked else "All checks passed!\n"
    if context.fixed:
        lines = [f"Found {_plural(remaining + context.fixed, 'error')} ({context.fixed} fixed, {remaining} remaining)."]
    else:
        lines = [f"Found {_plural(remaining, 'error')}."]
    fixable = sum(is_fixable(d, context) for d in diagnostics)
    hidden = sum(d.fix is not None and not is_fixable(d, context) for d in diagnostics)
    hint = f"{_plural(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hidden else "."))
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    if unchecked:
        lines.append(unchecked)
    return "\n".join(lines) + "\n"


def read_sources(paths: Iterable[str]) -> dict[str, list[str]]:
    """Read and decode each path once; a file that cannot be read or decoded is left out. A notebook's
    lines are those of the module its code cells make, IPython syntax shown as written."""
    sources: dict[str, list[str]] = {}
    for path in sorted(set(paths)):
        try:
            data = read_file(Path(path))
            sources[path] = read_notebook(data).display_lines() if is_notebook(path) \
                else source_lines(decode_source(data).text)
        except (OSError, SourceDecodeError, NotebookError):
            continue
    return sources


def read_notebook_indexes(paths: Iterable[str]) -> dict[str, NotebookIndex]:
    """The cell maps of the notebooks among `paths` (one that cannot be read is left out)."""
    indexes: dict[str, NotebookIndex] = {}
    for path in sorted({path for path in paths if is_notebook(path)}):
        try:
            indexes[path] = read_notebook(read_file(Path(path))).index
        except (OSError, NotebookError):
            continue
    return indexes
