"""pylint's parseable line format, as ruff writes it: `path:line: [CODE] message` (`path:cell N:line:`
in a notebook)."""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def format_pylint(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One line per diagnostic, nothing else (`context` maps notebook lines to cells)."""
    return "".join(f"{d.path}:{_line(d, context)}: [{d.code}] {d.message}\n" for d in sorted(diagnostics))


def _line(d: Diagnostic, context: OutputContext) -> str:
    place = context.place(d.path, d.range.start)
    return f"cell {place.cell}:{place.line}" if place.cell is not None else str(place.line)
