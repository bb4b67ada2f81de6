"""Related locations (why a finding's code is traced, where a value changes) as every format shows them.

Kept apart from the formats so each can attach them in one line: `note:` lines for text, a `related`
list for JSON (see :func:`related_items`), `relatedLocations` and `codeFlows` for SARIF.
"""

from __future__ import annotations

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column

NOTE_INDENT = "  "


def note_lines(diagnostic: Diagnostic) -> list[str]:
    """`  note: path:line:col: message` per related location, in order (1-based columns)."""
    lines = []
    for related in diagnostic.related:
        start = related.range.start
        location = f"{diagnostic.related_path(related)}:{start.line}:{display_column(start.column)}"
        lines.append(f"{NOTE_INDENT}note: {location}: {related.message}")
    return lines


def related_items(diagnostic: Diagnostic) -> list[dict[str, object]]:
    """The JSON `related` list, in the shape of ruff's JSON items: message, filename, location and
    end_location as `{row, column}` (1-based)."""
    return [
        {
            "message": related.message,
            "filename": diagnostic.related_path(related),
            "location": {"row": related.range.start.line, "column": display_column(related.range.start.column)},
            "end_location": {"row": related.range.end.line, "column": display_column(related.range.end.column)},
        }
        for related in diagnostic.related
    ]
