"""A JSON list of diagnostics with 1-based lines and columns (ruff-like field names)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, Fix, Position, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext
from jaxcheck.analyzer.output.related import related_items


def format_json(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """Each item: code, name, message, path, line, column, end_line, end_column, fix (or null), url,
    related (notes that explain the finding, see :func:`related_items`; `context` is unused)."""
    items = [
        {
            "code": d.code,
            "name": d.name,
            "message": d.message,
            "path": d.path,
            "line": d.range.start.line,
            "column": display_column(d.range.start.column),
            "end_line": d.range.end.line,
            "end_column": display_column(d.range.end.column),
            "fix": _fix(d.fix),
            "url": d.url,
            "related": related_items(d),
        }
        for d in sorted(diagnostics)
    ]
    return json.dumps(items, indent=2) + "\n"


def _location(position: Position) -> dict[str, int]:
    return {"line": position.line, "column": display_column(position.column)}


def _fix(fix: Fix | None) -> dict[str, object] | None:
    """`{"applicability", "title", "edits": [{"content", "location", "end_location"}]}` (ruff's shape)."""
    if fix is None:
        return None
    edits = [
        {"content": e.content, "location": _location(e.range.start), "end_location": _location(e.range.end)}
        for e in fix.edits
    ]
    return {"applicability": fix.applicability, "title": fix.title, "edits": edits}
