"""`path:line:col: CODE message`, the line format editors and CI problem matchers parse."""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def _headline(diagnostic: Diagnostic) -> str:
    """`path:line:col: CODE message` with a 1-based column."""
    start = diagnostic.range.start
    return f"{diagnostic.path}:{start.line}:{display_column(start.column)}: {diagnostic.code} {diagnostic.message}"


def summary(count: int) -> str:
    """`Found N findings.`"""
    return f"Found {count} {'finding' if count == 1 else 'findings'}."


def format_concise(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One line per diagnostic, then a count when there is anything to say (`context` is unused)."""
    lines = [_headline(d) for d in sorted(diagnostics)]
    if lines:
        lines.append(summary(len(lines)))
    return "\n".join(lines) + ("\n" if lines else "")
