"""Jupyter notebooks: reading one as the Python program its kernel runs, mapping positions back to
cells, and writing fixed cells back into the notebook.

The code cells, top to bottom, become one module (markdown and raw cells are skipped): a first line,
then each cell's lines followed by one boundary line. Boundary lines are comments, except around a
`%%time`/`%%timeit` cell, where they read a clock so that the cell reads as the timing code it is.
IPython syntax becomes ordinary Python of the same line structure, as IPython itself transforms it
(`!ls` is `get_ipython().system('ls')`, `%env X=1` is `get_ipython().run_line_magic('env', 'X=1')`);
`%timeit f(x)` (and `t = %timeit -o f(x)`, `%timeit y = f(x)`) becomes
`timeit.timeit(lambda: f(x))`, and `%time y = f(x)` (`%time f(x)`, `y = %time f(x)`) its code between
two clock reads on its line. Cells of a cell magic whose body is not Python (`%%bash`, `%%writefile`,
an unknown magic whose body does not parse) become comment lines. The kernel compiles each cell alone,
so each cell must also parse by itself (see :meth:`Notebook.cell_syntax_error`).

Writing back splices each changed cell's new `source` into the notebook's JSON text, so every other
byte (outputs, metadata, ids, indentation, key order, the final newline) stays as it was; a cell whose
magics a fix touched, or that cannot be told apart from its neighbours any more, is refused whole.
"""

from __future__ import annotations

import ast
import codecs
import difflib
import io
import json
import re
import tokenize
import warnings
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from pathlib import Path

from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range, RelatedLocation

NOTEBOOK_SUFFIX = ".ipynb"
_HEADER = "#jaxcheck:notebook"
_CLOCK_IMPORT = "import time as _jaxcheck_clock, timeit as _jaxcheck_timeit  " + _HEADER
_TIMER = "_jaxcheck_timeit.timeit(lambda: "
_CELL_START_CLOCK = "_jaxcheck_start = _jaxcheck_clock.perf_counter()"
_CELL_END_CLOCK = "_jaxcheck_clock.perf_counter()  "
_LINE_END_CLOCK = "; _jaxcheck_clock.perf_counter()"
_NOT_PYTHON_CELL_MAGICS = frozenset({"bash", "sh", "script", "sx", "system", "writefile", "file", "html", "javascript",
                                     "js", "latex", "markdown", "svg", "perl", "ruby", "pypy", "python2", "sql", "R"})
"""Cell magics whose body the kernel does not run as Python (`%%writefile` writes it). The body of any
other cell magic (`%%time`, `%%capture`, an extension's such as `%%autovisualize`) is read as Python
when it parses as Python."""
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
"""Cell magics that run their body as Python in the kernel (a body that does not parse is JAX001)."""
_TIMED_CELL_MAGICS = frozenset({"time", "timeit"})
_TIMEIT_OPTIONS_WITH_VALUE = frozenset("nrp")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""A line with its line break, as Python numbers lines."""
_BREAKS = ("\n", "\r")
_ASSIGNED_MAGIC = re.compile(r"(?P<target>[\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*(?P<escape>!!?|%)(?P<rest>.*)")
_TIMED_ASSIGNMENT = re.compile(r"[\w.]+(?:\s*,\s*[\w.]+)*\s*=(?!=)\s*(?P<value>.+)")
"""`y = f(x)` after `%timeit`: what it times is the value."""
_LINE_MENTION = re.compile(r"\bline (\d+)\b")
_ADDED_COMMENT = re.compile(r"[ \t]*#[^\r\n]*")


class NotebookError(ValueError):
    """The bytes are not a notebook jaxcheck can read, or fixed text cannot be put back into it."""


def is_notebook(path: str | Path) -> bool:
    """Whether the file at `path` is read as a Jupyter notebook (by its suffix, as ruff does)."""
    return str(path).endswith(NOTEBOOK_SUFFIX)


def _boundary(number: int) -> str:
    """The comment that ends the code cell numbered `number` (1-based among all cells)."""
    return f"#jaxcheck:end-of-cell-{number}"


@dataclass(frozen=True, slots=True)
class Shift:
    """A line IPython syntax was replaced on: the code of length `length` at column `original` of the
    cell's line sits at column `virtual` of the module's; any other column maps to `magic` (where the
    IPython syntax starts)."""

    magic: int
    original: int
    virtual: int
    length: int

    def column(self, virtual: int) -> int:
        """The cell's column for the module's column `virtual`."""
        if self.length and self.virtual <= virtual <= self.virtual + self.length:
            return virtual - self.virtual + self.original
        return self.magic


@dataclass(frozen=True, slots=True)
class Place:
    """Where a module position lies in the notebook: `cell` (1-based among all the notebook's cells, as
    ruff numbers them; None in a plain file), `line` within it and the 0-based `column`."""

    cell: int | None
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class NotebookIndex:
    """Maps lines of the module a notebook reads as back to its cells. `starts[i]` is the module line
    of the first line of the i-th code cell, `cells[i]` its number among all cells, `counts[i]` its
    saved execution count; `shifts` the lines where IPython syntax was replaced."""

    starts: tuple[int, ...]
    cells: tuple[int, ...]
    counts: tuple[int | None, ...]
    shifts: dict[int, Shift] = field(default_factory=dict)
    end: int = 1
    """The module's last line (the boundary after the last cell)."""
    clocks: frozenset[int] = frozenset()
    """The boundaries that read the clock at the end of a `%%time`/`%%timeit` cell: their position is the
    cell's first line, the magic that reads it."""

    def place(self, position: Position) -> Place:
        """The cell, line and column of a module position. A boundary line belongs to the cell before it
        (the line just past its end); the first line to the first cell."""
        if not self.starts:
            return Place(None, position.line, position.column)
        slot = self.cell_slot(position.line)
        if position.line in self.clocks:
            return Place(self.cells[slot], 1, 0)
        shift = self.shifts.get(position.line)
        column = shift.column(position.column) if shift is not None else position.column
        return Place(self.cells[slot], max(1, position.line - self.starts[slot] + 1), column)

    def cell_slot(self, line: int) -> int:
        """The index (among code cells) of the cell a module line belongs to."""
        return max(0, bisect_right(self.starts, line) - 1)

    def magic_lines(self) -> frozenset[int]:
        """Module lines no fix may touch: IPython syntax, the first line and the boundary lines."""
        return frozenset({1, self.end, *(start - 1 for start in self.starts[1:]), *self.shifts})


@dataclass(frozen=True, slots=True)
class _Cell:
    """A code cell: its number (1-based among all cells), its source as written, its lines as the module
    reads them (each with a line break) and the offsets of those that replace IPython syntax, where its
    JSON `source` value lies in the notebook's text and whether it is a list, its saved execution count,
    and whether it is a `%%time`/`%%timeit` cell."""

    number: int
    source: str
    virtual: tuple[str, ...]
    shifts: tuple[tuple[int, Shift], ...]
    span: tuple[int, int]
    listed: bool
    count: int | None
    timed: bool


@dataclass(frozen=True, slots=True)
class Notebook:
    """A notebook read as one module: its JSON text, its code cells and the module's `text`."""

    raw: str
    cells: tuple[_Cell, ...]
    text: str
    index: NotebookIndex
    bom: bool = False

    def with_text(self, text: str) -> bytes:
        """The notebook's bytes with its code cells made to read as `text` (a fixed version of
        :attr:`text`); cells whose lines did not change keep their JSON text byte for byte. Raises
        NotebookError when a cell boundary or a replaced IPython line is no longer where it was."""
        pieces, cursor = [], 0
        for cell, new in zip(self.cells, self._cell_lines(text)):
            if tuple(new) == cell.virtual:
                continue
            source = _restored(cell, new)
            start, end = cell.span
            pieces += [self.raw[cursor:start], _source_json(self.raw, cell, source)]
            cursor = end
        pieces.append(self.raw[cursor:])
        return (codecs.BOM_UTF8 if self.bom else b"") + "".join(pieces).encode("utf-8")

    def cell_syntax_error(self, failed: int | None = None) -> tuple[str, int, int] | None:
        """The first code cell that is no Python by itself though the module the cells make parses: the
        kernel compiles each cell alone, so a bracket, string or block left open at a cell's end, or a
        decorator whose `def` is in the next cell, is a syntax error in that cell, not code the next cell
        completes. Its message (lines it names are the module's), module line and 0-based column; None
        when every cell parses alone, or when the running Python refuses the module itself (code newer than
        it, judged by the module's parse). With `failed`, the module line where the module's parse failed:
        the error of the cell it lies in or of the cell before, alone, which says where the kernel fails
        (a block left open in one cell shows in the next one)."""
        cells = list(zip(self.cells, self.index.starts))
        if failed is not None:
            slot = self.index.cell_slot(failed)
            cells = cells[max(slot - 1, 0) : slot + 1]
        for cell, start in cells:
            try:
                _compiled("".join(cell.virtual))
            except SyntaxError as exc:
                error = exc
            except (ValueError, RecursionError, MemoryError):
                continue  # no verdict on the cell: the module's parse judges it
            else:
                continue
            if failed is None:
                try:
                    _compiled(self.text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    return None
            line, column = error.lineno or 1, max((error.offset or 1) - 1, 0)
            if line > len(cell.virtual):  # at the end of the cell: on its last line, past its last character
                line, column = len(cell.virtual), len(cell.virtual[-1].rstrip("\r\n")) if cell.virtual else 0
            message = _LINE_MENTION.sub(lambda match: f"line {start + int(match.group(1)) - 1}", str(error.msg))
            return f"syntax error: {message}", start + max(line, 1) - 1, column
        return None

    def display_lines(self) -> list[str]:
        """The lines of :attr:`text` (index 0 is line 1) with IPython syntax shown as written, and the
        first line and the cell boundaries (no line of any cell) blank."""
        lines = [line.rstrip("\r\n") for line in _LINE.findall(self.text)]
        for line in (1, self.index.end, *(start - 1 for start in self.index.starts[1:])):
            lines[line - 1] = ""
        for cell, start in zip(self.cells, self.index.starts):
            originals = _LINE.findall(cell.source)
            for offset, _ in cell.shifts:
                lines[start - 1 + offset] = originals[offset].rstrip("\r\n")
        return lines

    def cell_texts(self, text: str) -> list[tuple[int, str, str]]:
        """Each code cell whose source `text` changes: its number, its source now and as `text` makes it."""
        return [(cell.number, cell.source, _restored(cell, new))
                for cell, new in zip(self.cells, self._cell_lines(text)) if tuple(new) != cell.virtual]

    def diff(self, name: str, text: str, old: str, new: str) -> str:
        """A unified diff per changed cell (`name:cell N` in its headers), from :attr:`text` to `text`."""
        parts = []
        for number, before, after in self.cell_texts(text):
            lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                         f"{old}:cell {number}", f"{new}:cell {number}")
            parts.append("".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                                 for line in lines))
        return "".join(parts)

    def _cell_lines(self, text: str) -> list[list[str]]:
        lines = _LINE.findall(text)
        if not lines or lines[0].rstrip("\r\n") not in (_HEADER, _CLOCK_IMPORT):
            raise NotebookError("the notebook's first line changed")
        cells: list[list[str]] = []
        current: list[str] = []
        expected = 0
        for line in lines[1:]:
            if expected < len(self.cells) and line.rstrip("\r\n").endswith(_boundary(self.cells[expected].number)) \
                    and line.startswith(("#", "_jaxcheck_clock.perf_counter()")):
                cells.append(current)
                current, expected = [], expected + 1
            else:
                current.append(line)
        if expected != len(self.cells) or current:
            raise NotebookError("a fix moved a cell boundary")
        return cells


def read_notebook(data: bytes) -> Notebook:
    """Read a notebook's bytes (nbformat 4 JSON, UTF-8); NotebookError names what is wrong."""
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a notebook: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") \
            from None
    try:
        document = json.loads(raw)
        spans = _source_spans(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise NotebookError(f"not a notebook: invalid JSON: {exc}") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list) or len(spans) != len(cells):
        raise NotebookError("not a notebook: no `cells` list")
    python = _language(document) in (None, "python")  # another kernel's code cells are not Python: none read
    code: list[_Cell] = []
    for number, (cell, span) in enumerate(zip(cells, spans), 1):
        if not python or not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        value = cell.get("source", "")
        if span is None or not (isinstance(value, str) or (
                isinstance(value, list) and all(isinstance(part, str) for part in value))):
            raise NotebookError(f"not a notebook: cell {number} has no text `source`")
        source = value if isinstance(value, str) else "".join(value)
        count = cell.get("execution_count")
        code.append(_cell(number, source, span, isinstance(value, list), count if isinstance(count, int) else None))
    return _assembled(raw, code, data.startswith(codecs.BOM_UTF8))


def _language(document: dict[str, object]) -> str | None:
    metadata = document.get("metadata")
    info = metadata.get("language_info") if isinstance(metadata, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name.lower() if isinstance(name, str) else None


def _assembled(raw: str, cells: list[_Cell], bom: bool) -> Notebook:
    timed = any(cell.timed or cell.shifts for cell in cells)
    lines = [(_CLOCK_IMPORT if timed else _HEADER) + "\n"]
    starts, shifts = [], []
    for cell in cells:
        starts.append(len(lines) + 1)
        shifts += [(starts[-1] + offset, shift) for offset, shift in cell.shifts]
        lines += cell.virtual
        lines.append((_CELL_END_CLOCK if cell.timed else "") + _boundary(cell.number) + "\n")
    text = "".join(lines)
    clocks = frozenset(start + len(cell.virtual) for start, cell in zip(starts, cells) if cell.timed)
    index = NotebookIndex(tuple(starts), tuple(c.number for c in cells), tuple(c.count for c in cells), dict(shifts),
                          len(lines), clocks)
    return Notebook(raw, tuple(cells), text, index, bom)


def _cell(number: int, source: str, span: tuple[int, int], listed: bool, count: int | None) -> _Cell:
    """A code cell with its lines as the module reads them."""
    lines = _LINE.findall(source)
    first = lines[0].strip() if lines else ""
    magic = first[2:].split(None, 1)[0] if first.startswith("%%") and len(first) > 2 else None
    virtual: list[str] = []
    shifts: list[tuple[int, Shift]] = []
    in_string: str | None = None
    indent = _leading_indent(lines)
    for offset, line in enumerate(lines):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        cut = len(indent) if indent and body.startswith(indent) else 0
        body = body[cut:]
        if offset == 0 and magic is not None:
            replaced: tuple[str, Shift] | None = (_CELL_START_CLOCK if magic in _TIMED_CELL_MAGICS else "#",
                                                  Shift(0, 0, 0, 0))
        else:
            replaced = None if in_string else _line_magic(body)
        if replaced is not None:
            shift = replaced[1]
            virtual.append(replaced[0] + end)
            shifts.append((offset, replace(shift, magic=shift.magic + cut, original=shift.original + cut)))
            continue
        if cut:  # dedented as IPython does: columns map back past the indentation
            virtual.append(body + end)
            shifts.append((offset, Shift(cut, cut, 0, len(body))))
        else:
            virtual.append(line)
        in_string = _string_state(body, in_string)
    virtual = [line if line.endswith(_BREAKS) else line + "\n" for line in virtual]
    if magic is not None and (magic in _NOT_PYTHON_CELL_MAGICS or (
            magic not in _PYTHON_CELL_MAGICS and not _parses("".join(virtual[1:])))):
        virtual = ["#\n" for _ in lines]
        shifts = [(offset, Shift(0, 0, 0, 0)) for offset in range(len(lines))]
    return _Cell(number, source, tuple(virtual), tuple(shifts), span, listed, count,
                 magic in _TIMED_CELL_MAGICS and not virtual[0].startswith("#"))


def _leading_indent(lines: list[str]) -> str:
    """The indentation IPython removes from a cell (its `leading_indent` transform): that of the first line
    with text, from every line that starts with it; '' when that line is not indented."""
    first = next((line for line in lines if line.strip()), "")
    match = re.match(r"[ \t]+", first)
    return match.group() if match is not None else ""


def _compiled(code: str) -> None:
    """Compile `code` as the kernel's parser reads a cell (top-level `await` allowed); SyntaxError when it
    refuses it."""
    with warnings.catch_warnings():  # SyntaxWarnings about the checked code are not ours to print
        warnings.simplefilter("ignore")
        compile(code, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def _parses(code: str, mode: str = "exec") -> bool:
    """Whether `code` is Python (the body of a cell magic the kernel may run as Python; with mode
    `eval`, an expression)."""
    try:
        ast.parse(code, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _string_state(line: str, open_quote: str | None) -> str | None:
    """Whether a triple-quoted string is still open after `line` (its quotes), approximately: IPython
    syntax is only recognised outside such strings."""
    position = 0
    while True:
        if open_quote is None:
            match = re.compile(r"'''|\"\"\"|#").search(line, position)
            if match is None or match.group() == "#":
                return None
            open_quote, position = match.group(), match.end()
        else:
            found = line.find(open_quote, position)
            if found < 0:
                return open_quote
            open_quote, position = None, found + 3


def _line_magic(line: str) -> tuple[str, Shift] | None:
    """The Python a line of IPython syntax stands for, with its column shift; None for a Python line."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    column = len(indent)
    if not stripped or stripped.startswith("#"):
        return None
    if stripped.startswith(("!", "%")):
        escape = "!" if stripped.startswith("!") else "%"
        rest = stripped.lstrip("!%")
        if escape == "%":
            name, _, arguments = rest.partition(" ")
            if name in ("timeit", "time"):
                timed = _timed(indent, stripped, name, arguments)
                if timed is not None:
                    return timed
            return _neutral(indent, "run_line_magic", name, arguments.strip()), Shift(column, column, column, 0)
        return _neutral(indent, "system", stripped.lstrip("!"), None), Shift(column, column, column, 0)
    if stripped.startswith("?") or (stripped.endswith("?") and _is_help(stripped)):
        return _neutral(indent, "run_line_magic", "pinfo", stripped.strip("?")), Shift(column, column, column, 0)
    match = _ASSIGNED_MAGIC.fullmatch(stripped)
    if match is not None:
        target, rest = match.group("target"), match.group("rest")
        if match.group("escape") == "%":
            name, _, arguments = rest.partition(" ")
            if name in ("timeit", "time"):
                timed = _timed(indent, stripped, name, arguments, target)
                if timed is not None:
                    return timed
            call = _neutral("", "run_line_magic", name, arguments.strip())
        else:
            call = _neutral("", "getoutput", rest, None)
        return f"{indent}{target} = {call}", Shift(column, column, column, 0)
    return None


def _is_help(stripped: str) -> bool:
    """`obj?`, `obj.attr??`: a name followed by question marks (not Python, so never valid code)."""
    return re.fullmatch(r"[\w.]+\?{1,2}", stripped) is not None


def _timed(indent: str, stripped: str, name: str, arguments: str, target: str | None = None,
           ) -> tuple[str, Shift] | None:
    """A `%timeit`/`%time` line as the timing code it runs: `%timeit [options] expression` as
    `timeit.timeit(lambda: expression)` (`t = %timeit -o ...`: assigned; `%timeit y = expression` too:
    timeit runs it in a scope of its own, so nothing is bound or consumed here), `%time code` as `code`
    between two clock reads on the line, which it runs here (`y = %time f(x)`: `y = f(x)` there). None
    when the code is not one line of simple statements (an expression when assigned; for `%timeit`, an
    expression or one assigned to names)."""
    words = arguments.split(" ")
    skip = 0
    while name == "timeit" and skip < len(words) and (words[skip] == "" or words[skip].startswith("-")):
        option = words[skip][1:2]
        skip += 2 if option in _TIMEIT_OPTIONS_WITH_VALUE and len(words[skip]) == 2 else 1
    code, comment = _without_comment(" ".join(words[skip:]).strip())
    expression = bool(code) and _parses(code, "eval")
    if not code or (target is not None and not expression):
        return None
    original = len(indent) + stripped.index(code, len(stripped) - len(arguments))
    assigned = f"{target} = " if target is not None else ""
    if name == "timeit" and not expression:
        value = _TIMED_ASSIGNMENT.fullmatch(code)
        if value is None or not _parses(value.group("value"), "eval"):
            return None
        original, code, expression = original + value.start("value"), value.group("value"), True
    if name == "timeit" and expression:
        prefix = f"{indent}{assigned}{_TIMER}"
        return f"{prefix}{code}){comment}", Shift(len(indent), original, len(prefix), len(code))
    prefix = f"{indent}{_CELL_START_CLOCK}; {assigned}"
    if not _parses(f"{prefix.lstrip()}{code}{_LINE_END_CLOCK}"):
        return None
    return f"{prefix}{code}{_LINE_END_CLOCK}{comment}", Shift(len(indent), original, len(prefix), len(code))


def _without_comment(code: str) -> tuple[str, str]:
    """`code` without its trailing comment, and that comment with the blanks before it ('' when none)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code, ""
    for token in tokens:
        if token.type == tokenize.COMMENT:
            kept = code[: token.start[1]].rstrip()
            return kept, code[len(kept):]
    return code, ""


def _neutral(indent: str, method: str, name: str, arguments: str | None) -> str:
    """IPython's own transformation of a line magic or shell escape."""
    call = f"get_ipython().{method}({name!r}" + (f", {arguments!r})" if arguments is not None else ")")
    return indent + call


def _restored(cell: _Cell, new: list[str]) -> str:
    """A cell's source from its fixed module lines: replaced IPython lines put back as written."""
    originals = [line if line.endswith(_BREAKS) else line + "\n" for line in _LINE.findall(cell.source)]
    replaced = [(cell.virtual[offset], originals[offset]) for offset, _ in cell.shifts]
    out = []
    for line in new:
        placeholder, original = replaced[0] if replaced else ("", "")
        body = placeholder.rstrip("\r\n")
        added = _ADDED_COMMENT.fullmatch(line.rstrip("\r\n")[len(body):]) if line.startswith(body) else None
        if replaced and (line == placeholder or (body and added is not None)):
            replaced.pop(0)
            # a comment added after the placeholder (`--add-noqa`) goes after the line as written
            out.append(original if line == placeholder else
                       original.rstrip("\r\n").rstrip() + line.rstrip("\r\n")[len(body.rstrip()):] +
                       original[len(original.rstrip("\r\n")):])
        else:
            out.append(line)
    if replaced:
        raise NotebookError(f"a fix touched IPython syntax in cell {cell.number}")
    source = "".join(out)
    if not cell.source.endswith(_BREAKS) and source.endswith("\n"):
        source = source[:-1]
    return source


def _source_json(raw: str, cell: _Cell, source: str) -> str:
    """The JSON text of a cell's new `source`, in the style of the value it replaces (a list of lines
    laid out as nbformat writes them, or one string)."""
    ascii_only = raw.isascii() or any("\ud800" <= char <= "\udfff" for char in source)  # a lone surrogate stays escaped
    if not cell.listed:
        return json.dumps(source, ensure_ascii=ascii_only)
    start, end = cell.span
    old = raw[start:end]
    parts = [json.dumps(line, ensure_ascii=ascii_only) for line in _LINE.findall(source)]
    if "\n" not in old:
        return "[" + ", ".join(parts) + "]"
    line_start = raw.rfind("\n", 0, start) + 1
    key_indent = raw[line_start:start][: len(raw[line_start:start]) - len(raw[line_start:start].lstrip())]
    inner = re.match(r"\[\s*\n([ \t]*)", old)
    item_indent = inner.group(1) if inner is not None and inner.group(1) else key_indent + " "
    closing = old[old.rfind("\n") + 1 : -1] if old.rstrip().endswith("]") else key_indent
    if not parts:
        return "[]"
    newline = "\r\n" if "\r\n" in old else "\n"  # a notebook saved with Windows line breaks keeps them
    return f"[{newline}" + f",{newline}".join(item_indent + part for part in parts) + newline + closing + "]"


def _source_spans(raw: str) -> list[tuple[int, int] | None]:
    """Where each cell's `source` value lies in the notebook's JSON text (None: the cell has none)."""
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int] | None] = []
    position = _skip(raw, 0)
    if raw[position : position + 1] != "{":
        return spans
    for key, start in _members(raw, position, decoder):
        if key != "cells":
            continue
        if raw[start : start + 1] != "[":
            return spans
        position = _skip(raw, start + 1)
        while raw[position : position + 1] == "{":
            found = None
            end = position
            for cell_key, value_start in _members(raw, position, decoder):
                value_end = decoder.raw_decode(raw, value_start)[1]
                if cell_key == "source":
                    found = (value_start, value_end)
                end = value_end
            spans.append(found)
            position = _skip(raw, _skip(raw, end) + 1)  # past the cell's closing brace
            if raw[position : position + 1] == ",":
                position = _skip(raw, position + 1)
    return spans


def _members(raw: str, position: int, decoder: json.JSONDecoder) -> list[tuple[str, int]]:
    """The keys of the JSON object at `position` with where each value starts."""
    members = []
    position = _skip(raw, position + 1)
    while raw[position : position + 1] == '"':
        key, position = decoder.raw_decode(raw, position)
        position = _skip(raw, _skip(raw, position) + 1)  # past the colon
        members.append((key, position))
        position = _skip(raw, decoder.raw_decode(raw, position)[1])
        if raw[position : position + 1] == ",":
            position = _skip(raw, position + 1)
    return members


def _skip(raw: str, position: int) -> int:
    match = _WHITESPACE.match(raw, position)
    return match.end() if match is not None else position


# ------------------------------------------------------------------------------ findings in cells
def in_cells(diagnostics: list[Diagnostic], index: NotebookIndex) -> list[Diagnostic]:
    """A notebook's findings as cells show them: no fix that touches IPython syntax or a cell boundary,
    `line N` in messages naming the cell, and one note when the cells a finding involves were last run
    in another order than they stand in."""
    untouchable = index.magic_lines()
    found = []
    for diagnostic in diagnostics:
        fix = diagnostic.fix
        if fix is not None and any(line in untouchable for edit in fix.edits
                                   for line in range(edit.range.start.line, edit.range.end.line + 1)):
            fix = None
        related = tuple(replace(note, message=_cell_lines_named(note.message, index)) for note in diagnostic.related)
        order = _order_note(diagnostic, index)
        found.append(replace(diagnostic, message=_cell_lines_named(diagnostic.message, index), fix=fix,
                             related=related + ((order,) if order is not None else ())))
    return found


def _cell_lines_named(message: str, index: NotebookIndex) -> str:
    def named(match: re.Match[str]) -> str:
        place = index.place(Position(int(match.group(1)), 0))
        return f"line {place.line} of cell {place.cell}"

    return _LINE_MENTION.sub(named, message)


def _order_note(diagnostic: Diagnostic, index: NotebookIndex) -> RelatedLocation | None:
    """The note that the saved execution counts of the cells a finding involves (its own and those of
    its notes in the same notebook) show them run in another order than they stand in."""
    lines = [diagnostic.range.start.line,
             *(note.range.start.line for note in diagnostic.related if note.path in (None, diagnostic.path))]
    slots = sorted({index.cell_slot(line) for line in lines})
    counted = [(slot, count) for slot in slots if (count := index.counts[slot]) is not None]
    if len(counted) < 2 or all(a[1] < b[1] for a, b in zip(counted, counted[1:])):
        return None
    ran = sorted(counted, key=lambda item: item[1])
    first = next(slot for (slot, _), (expected, _) in zip(ran, counted) if slot != expected)
    order = ", ".join(f"cell {index.cells[slot]} [{count}]" for slot, count in ran)
    start = Position(index.starts[first], 0)
    return RelatedLocation(f"the saved execution counts show these cells last ran in another order: {order}",
                           Range(start, start))
