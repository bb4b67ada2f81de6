"""`path:line:col: CODE [*] message`, the line format editors and CI problem matchers parse (ruff's
`concise`), then ruff's summary."""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.context import PLAIN, OutputContext, fix_marker, summary


def headline(diagnostic: Diagnostic, context: OutputContext = PLAIN) -> str:
    """`path:line:col: CODE [*] message` with a 1-based column (`path:cell N:line:col` in a notebook);
    `[*]` only when the fix would apply."""
    return (f"{context.label(diagnostic.path, diagnostic.range.start)}: {diagnostic.code} "
            f"{fix_marker(diagnostic, context)}{diagnostic.message}")


def format_concise(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One line per diagnostic, then the summary."""
    lines = "".join(headline(d, context) + "\n" for d in sorted(diagnostics))
    return lines + summary(diagnostics, context)
