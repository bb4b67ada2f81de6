"""Fixing files: apply fixes until none applies, never leave a file that does not parse, write atomically.

`--fix` applies safe fixes, `--unsafe-fixes` unsafe ones too, `--diff` shows the result without
writing, `--add-noqa` adds suppression comments. What is written is always computed from a fresh check
of the file's current bytes: the findings of a run (which may come from the cache) only choose the
files. A file keeps its encoding, byte-order mark, line endings, permission bits, symlinks and hard
links; a file edited while it was being fixed is left alone, and so is a file whose fixes would bring
new findings (more findings of some code after fixing than before). A notebook is fixed as the module
its code cells make, and only the changed cells' sources are written back (see :mod:`.notebooks`).
"""

from __future__ import annotations

import codecs
import difflib
import errno
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from jaxcheck.analyzer.diagnostics import Diagnostic, Fix
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.files import FileChangedError, read_file, write_through
from jaxcheck.analyzer.fixes import apply_fixes
from jaxcheck.analyzer.noqa import add_noqa
from jaxcheck.analyzer.notebooks import Notebook, NotebookError, is_notebook, read_notebook
from jaxcheck.analyzer.parsing import ParseFailure, parse_source, run_with_deep_stack
from jaxcheck.analyzer.source import SourceDecodeError, decode_source

MAX_ROUNDS = 10
"""Fixes can enable other fixes; stop after this many rounds (a loop would be a rule bug)."""


@dataclass(frozen=True, slots=True)
class FileFix:
    """The outcome of fixing one file: its text before and after, how many fixes were applied, and
    an error when fixing stopped early (the file is then left as it was)."""

    path: Path
    before: str
    after: str
    applied: int
    error: str | None = None
    notebook: Notebook | None = None
    """The notebook `before` and `after` are the code of (None for a Python file)."""

    def diff(self) -> str:
        """A unified diff from the file as it is to the fixed file ('' when nothing changes); one per
        changed cell for a notebook (`a/demo.ipynb:cell 3`)."""
        name = self.path.as_posix()
        old, new = (name, name) if self.path.is_absolute() else (f"a/{name}", f"b/{name}")
        if self.notebook is not None:
            return self.notebook.diff(name, self.after, old, new)
        lines = difflib.unified_diff(self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), old, new)
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def fixable(diagnostic: Diagnostic, unsafe: bool) -> Fix | None:
    """The diagnostic's fix when the chosen safety level allows it."""
    fix = diagnostic.fix
    if fix is None or (fix.applicability == "unsafe" and not unsafe):
        return None
    return fix


def fix_files(linter: Linter, diagnostics: Sequence[Diagnostic], unsafe: bool) -> list[FileFix]:
    """Fix every file that has applicable fixes among `diagnostics` (nothing is written here). The fixes
    applied are those of a fresh check of each file's current bytes: `diagnostics` only choose the files."""
    paths = sorted({d.path for d in diagnostics if fixable(d, unsafe) is not None})
    return [_fix_file(linter, Path(path), unsafe) for path in paths]


def noqa_file(linter: Linter, path: Path) -> FileFix:
    """The file at `path` with `# noqa: CODE` for each finding of a fresh check of its current bytes
    (`--add-noqa`; `applied` counts the lines changed, nothing is written here)."""
    read = _read(path)
    if isinstance(read, FileFix):
        return read
    data, text, notebook = read
    after, count = add_noqa(text, linter.check_file_in_project(path, data).diagnostics)
    if notebook is not None:
        try:
            notebook.with_text(after)  # a cell that cannot take its comments fails here, not when writing
        except NotebookError as exc:
            return FileFix(path, text, text, 0, f"{exc}; file left unchanged", notebook)
    return FileFix(path, text, after, count, notebook=notebook)


def write_fixed(result: FileFix) -> None:
    """Write a fixed file in its own encoding (and BOM) through :func:`~.files.write_through`: symlinks
    keep their target, hard links stay linked, permission bits stay. Raises OSError when the file
    changed since it was fixed, or changes while it is written, or cannot be written (a read-only file:
    PermissionError); the file is left as it was then."""
    data = read_file(result.path)
    if result.notebook is not None:
        try:
            notebook = read_notebook(data)
        except NotebookError:
            raise FileChangedError(result.path) from None
        if notebook.text != result.before:
            raise FileChangedError(result.path)
        try:
            fixed = notebook.with_text(result.after)
        except NotebookError as exc:
            raise OSError(errno.EINVAL, str(exc), str(result.path)) from None
        write_through(result.path, fixed, expected=data)
        return
    try:
        current = decode_source(data)
    except SourceDecodeError:
        current = None
    if current is None or current.text != result.before:
        raise FileChangedError(result.path)
    encoded = result.after.encode(current.encoding)
    if data.startswith(codecs.BOM_UTF8):
        encoded = codecs.BOM_UTF8 + encoded
    write_through(result.path, encoded, expected=data)


def _read(path: Path) -> tuple[bytes, str, Notebook | None] | FileFix:
    """The bytes of the file at `path`, the text fixes apply to and, for a notebook, the notebook; or
    the FileFix that says why it cannot be read."""
    try:
        data = read_file(path)
        if is_notebook(path):
            notebook = read_notebook(data)
            return data, notebook.text, notebook
        return data, decode_source(data).text, None
    except (OSError, SourceDecodeError, NotebookError) as exc:
        return FileFix(path, "", "", 0, f"cannot read: {exc}")


def encoder(data: bytes, notebook: Notebook | None) -> Callable[[str], bytes]:
    """How a fixed text becomes the file's bytes again: the notebook with its code cells changed, or the
    text in the encoding `data` declares."""
    if notebook is not None:
        return notebook.with_text
    encoding = decode_source(data).encoding
    return lambda text: text.encode(encoding)


def _fix_file(linter: Linter, path: Path, unsafe: bool) -> FileFix:
    read = _read(path)
    if isinstance(read, FileFix):
        return read
    data, text, notebook = read
    encode = encoder(data, notebook)
    try:
        result = fix_source(path, text, linter.check_file_in_project(path, data).diagnostics, unsafe,
                            lambda fixed: linter.check_file_in_project(path, encode(fixed)).diagnostics)
        if notebook is not None and result.error is None:
            notebook.with_text(result.after)  # a cell that cannot be written back fails here, not when writing
    except NotebookError as exc:
        return FileFix(path, text, text, 0, f"{exc}; file left unchanged", notebook)
    return replace(result, notebook=notebook)


def fix_source(path: Path, before: str, diagnostics: list[Diagnostic], unsafe: bool,
               check: Callable[[str], list[Diagnostic]]) -> FileFix:
    """Fix the text `before` (the file at `path`, or standard input) in rounds, `check` giving the
    diagnostics of a fixed text; nothing is read or written here."""
    text = before
    applied = 0
    found = Counter(d.code for d in diagnostics)
    for _ in range(MAX_ROUNDS):
        fixes = [fix for d in diagnostics if (fix := fixable(d, unsafe)) is not None]
        if not fixes:
            break
        candidate = apply_fixes(text, fixes)
        if candidate == text:
            break
        if isinstance(run_with_deep_stack(lambda: parse_source(candidate)), ParseFailure):
            return FileFix(path, before, before, 0, "a fix produced code that does not parse; file left unchanged")
        applied += len(fixes)
        text = candidate
        diagnostics = check(text)
        added = sorted(code for code, count in Counter(d.code for d in diagnostics).items() if count > found[code])
        if added:
            return FileFix(path, before, before, 0,
                           f"fixing would add new findings ({', '.join(added)}); file left unchanged")
    return FileFix(path, before, text, applied)
