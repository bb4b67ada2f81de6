"""`path:line:col: CODE message`, the line format editors and CI problem matchers parse."""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column


def format_text(diagnostics: Sequence[Diagnostic]) -> str:
    """One line per diagnostic with a 1-based column, then a count when there is anything to say."""
    lines = [
        f"{d.path}:{d.range.start.line}:{display_column(d.range.start.column)}: {d.code} {d.message}"
        for d in diagnostics
    ]
    if diagnostics:
        noun = "finding" if len(diagnostics) == 1 else "findings"
        lines.append(f"Found {len(diagnostics)} {noun}.")
    return "\n".join(lines) + ("\n" if lines else "")
