"""The flake8 plugin: a thin adapter over the engine (entry point `JAX` in `flake8.extension`).

flake8 keeps its own selection (`--select`, `--extend-ignore`) and `# noqa` handling, so the adapter
runs every rule that is on by default with suppression off. Rule options come from `[tool.jaxcheck]`
in `pyproject.toml`, which flake8 itself never reads. The file's text is flake8's `lines`, turned back
into the file's own bytes (so a PEP 263 declaration decodes it as the CLI does); the rest of the project
is read from disk for cross-module tracing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

from jaxcheck.version import __version__
from jaxcheck.analyzer.config import Configuration, load_configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.files import read_file
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, encode_source

Flake8Result = tuple[int, int, str, type]


class Flake8Plugin:
    """Yields `(line, column, "JAX301 message", type)` for each finding; flake8 adds 1 to columns."""

    name = "jaxcheck"
    version = __version__

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # `tree` must be a parameter for flake8 to run this as a once-per-file plugin; it is unused
        # because jaxcheck parses with LibCST.
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[Flake8Result]:
        path = Path(self.filename)
        # A broken [tool.jaxcheck] raises ConfigError (one line naming file and key); flake8 then stops
        # with that message, as the CLI exits 2.
        configuration = load_configuration(None, path if path.exists() else Path.cwd())
        linter = Linter(Configuration(settings=configuration.settings.model_copy(update={"select": None,
                                                                                        "ignore": ()}),
                                      root=configuration.root), noqa=False)
        report = linter.check_file_in_project(path, source_bytes(self.lines, path))
        for diagnostic in report.diagnostics:
            start = diagnostic.range.start
            yield start.line, start.column, f"{diagnostic.code} {diagnostic.message}", type(self)
        for error in report.errors:  # a file too deeply nested to analyze, or a failing rule
            yield 1, 0, f"JAX001 jaxcheck could not check this file: {error.message}", type(self)


def source_bytes(lines: Sequence[str], path: Path) -> bytes:
    """The bytes whose text flake8 gave as `lines`: the file on disk when flake8 read exactly that
    (it decodes with the declared encoding, or latin-1 when that fails), else the text encoded in its
    declared encoding (stdin, an editor buffer)."""
    text = "".join(lines)
    try:
        data = read_file(path)
    except OSError:
        data = None
    if data is not None:
        try:
            same = decode_source(data).text == text
        except SourceDecodeError:
            same = data.decode("latin-1") == text
        if same:
            return data
    return encode_source(text)
