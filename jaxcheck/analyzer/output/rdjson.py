"""reviewdog's diagnostic format (`rdjson`, the `DiagnosticResult` message), as ruff writes it: a
source, a severity, and per finding its code and docs URL, location range and fixes as suggestions.
Lines and columns are 1-based; reviewdog turns suggestions into suggested changes on the review."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import PROJECT_URL, Diagnostic, Range, display_column
from jaxcheck.analyzer.notebooks import Place
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def format_rdjson(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One `DiagnosticResult` object (`context` maps notebook lines to cells: lines are then within the
    finding's cell, and the message starts with `cell N: `)."""
    result = {
        "source": {"name": "jaxcheck", "url": PROJECT_URL},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(d, context) for d in sorted(diagnostics)],
    }
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def _diagnostic(d: Diagnostic, context: OutputContext) -> dict[str, object]:
    cell = context.place(d.path, d.range.start).cell
    item: dict[str, object] = {
        "code": {"value": d.code, "url": d.url},
        "location": {"path": d.path, "range": _range(d.path, d.range, context)},
        "message": (f"cell {cell}: " if cell is not None else "") + d.message,
    }
    if d.fix is not None:
        item["suggestions"] = [{"range": _range(d.path, e.range, context), "text": e.content} for e in d.fix.edits]
    return item


def _range(path: str, span: Range, context: OutputContext) -> dict[str, dict[str, int]]:
    return {"start": _position(context.place(path, span.start)), "end": _position(context.place(path, span.end))}


def _position(place: Place) -> dict[str, int]:
    return {"line": place.line, "column": display_column(place.column)}
