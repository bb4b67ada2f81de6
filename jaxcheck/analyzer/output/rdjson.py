"""reviewdog's diagnostic format (`rdjson`, the `DiagnosticResult` message), as ruff writes it: a
source, a severity, and per finding its code and docs URL, location range and fixes as suggestions.
Lines and columns are 1-based; reviewdog turns suggestions into suggested changes on the review."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import PROJECT_URL, Diagnostic, Position, Range, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def format_rdjson(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One `DiagnosticResult` object (`context` is unused)."""
    result = {
        "source": {"name": "jaxcheck", "url": PROJECT_URL},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(d) for d in sorted(diagnostics)],
    }
    return json.dumps(result, indent=2, sort_keys=True) + "\n"


def _diagnostic(d: Diagnostic) -> dict[str, object]:
    item: dict[str, object] = {
        "code": {"value": d.code, "url": d.url},
        "location": {"path": d.path, "range": _range(d.range)},
        "message": d.message,
    }
    if d.fix is not None:
        item["suggestions"] = [{"range": _range(e.range), "text": e.content} for e in d.fix.edits]
    return item


def _range(span: Range) -> dict[str, dict[str, int]]:
    return {"start": _position(span.start), "end": _position(span.end)}


def _position(position: Position) -> dict[str, int]:
    return {"line": position.line, "column": display_column(position.column)}
