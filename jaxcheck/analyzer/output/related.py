"""Related locations (why a finding's code is traced, where a value changes) as every format shows them.

Kept apart from the formats so each can attach them in one line: `note:` lines for text, a `related`
list for JSON (see :func:`related_items`), `relatedLocations` and `codeFlows` for SARIF.
"""

from __future__ import annotations

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext

NOTE_INDENT = "  "


def note_lines(diagnostic: Diagnostic, context: OutputContext = PLAIN) -> list[str]:
    """`  note: path:line:col: message` per related location, in order (1-based columns; `path:cell
    N:line:col` in a notebook)."""
    return [f"{NOTE_INDENT}note: {context.label(diagnostic.related_path(related), related.range.start)}: "
            f"{related.message}" for related in diagnostic.related]


def related_items(diagnostic: Diagnostic, context: OutputContext = PLAIN) -> list[dict[str, object]]:
    """The JSON `related` list, in the shape of ruff's JSON items: message, filename, `cell` (only in a
    notebook), location and end_location as `{row, column}` (1-based, within the cell)."""
    items: list[dict[str, object]] = []
    for related in diagnostic.related:
        path = diagnostic.related_path(related)
        start, end = context.place(path, related.range.start), context.place(path, related.range.end)
        item: dict[str, object] = {"message": related.message, "filename": path}
        if start.cell is not None:
            item["cell"] = start.cell
        item |= {"location": {"row": start.line, "column": display_column(start.column)},
                 "end_location": {"row": end.line, "column": display_column(end.column)}}
        items.append(item)
    return items
