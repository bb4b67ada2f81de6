"""pylint's parseable line format, as ruff writes it: `path:line: [CODE] message`."""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def format_pylint(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One line per diagnostic, nothing else (`context` is unused)."""
    return "".join(f"{d.path}:{d.range.start.line}: [{d.code}] {d.message}\n" for d in sorted(diagnostics))
