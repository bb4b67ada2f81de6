"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

`::error file=PATH,line=L,col=C,endLine=EL,endColumn=EC,title=CODE (name)::message`; in a notebook the
lines are those of the finding's cell, and the message starts with `cell N: `.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext

_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def format_github(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One `::error` command per diagnostic, 1-based lines and columns (`context` maps notebook lines to
    cells)."""
    return "".join(_command(d, context) + "\n" for d in sorted(diagnostics))


def _command(d: Diagnostic, context: OutputContext) -> str:
    start, end = context.place(d.path, d.range.start), context.place(d.path, d.range.end)
    properties = {
        "file": d.path,
        "line": start.line,
        "col": display_column(start.column),
        "endLine": end.line,
        "endColumn": display_column(end.column),
        "title": f"{d.code} ({d.name})",
    }
    joined = ",".join(f"{key}={_escape(str(value), _PROPERTY_ESCAPES)}" for key, value in properties.items())
    cell = f"cell {start.cell}: " if start.cell is not None else ""
    return f"::error {joined}::{_escape(cell + d.message, _DATA_ESCAPES)}"


def _escape(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for raw, escaped in escapes:  # `%` first, so escapes are not escaped again
        text = text.replace(raw, escaped)
    return text
