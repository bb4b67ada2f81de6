"""GitHub Actions workflow commands: each finding becomes an annotation on the pull request.

`::error file=PATH,line=L,col=C,endLine=EL,endColumn=EC,title=CODE (name)::message`
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext

_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def format_github(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One `::error` command per diagnostic, 1-based lines and columns (`context` is unused)."""
    return "".join(_command(d) + "\n" for d in sorted(diagnostics))


def _command(d: Diagnostic) -> str:
    properties = {
        "file": d.path,
        "line": d.range.start.line,
        "col": display_column(d.range.start.column),
        "endLine": d.range.end.line,
        "endColumn": display_column(d.range.end.column),
        "title": f"{d.code} ({d.name})",
    }
    joined = ",".join(f"{key}={_escape(str(value), _PROPERTY_ESCAPES)}" for key, value in properties.items())
    return f"::error {joined}::{_escape(d.message, _DATA_ESCAPES)}"


def _escape(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for raw, escaped in escapes:  # `%` first, so escapes are not escaped again
        text = text.replace(raw, escaped)
    return text
