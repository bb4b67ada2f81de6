"""A JSON list of diagnostics with 1-based lines and columns (ruff-like field names)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    """Each item: code, name, message, path, line, column, end_line, end_column, fix (null), url."""
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
            "fix": None,
            "url": d.url,
        }
        for d in diagnostics
    ]
    return json.dumps(items, indent=2) + "\n"
