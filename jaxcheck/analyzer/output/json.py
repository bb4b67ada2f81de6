"""ruff's `json` and `json-lines` formats, field for field.

Each item: `cell` (always null: notebooks are not checked), `code`, `end_location` and `location`
(`{row, column}`, 1-based), `filename`, `fix` (null or `{applicability, message, edits: [{content,
location, end_location}]}`), `message`, `noqa_row` (the line a `# noqa` comment for it goes on) and
`url`. Keys are sorted, as ruff prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, Fix, Position, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext
from jaxcheck.analyzer.output.related import related_items


def format_json(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """A JSON list of ruff-shaped items (`context` is unused)."""
    return json.dumps([json_item(d) for d in sorted(diagnostics)], indent=2, sort_keys=True) + "\n"


def format_json_lines(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One ruff-shaped JSON object per line (`context` is unused)."""
    return "".join(json.dumps(json_item(d), sort_keys=True) + "\n" for d in sorted(diagnostics))


def json_item(d: Diagnostic) -> dict[str, object]:
    """One diagnostic in ruff's JSON shape, plus `related` (the notes that explain it, see
    :func:`related_items`) when it has any: tools that read ruff's keys ignore it."""
    item: dict[str, object] = {
        "cell": None,
        "code": d.code,
        "end_location": location(d.range.end),
        "filename": d.path,
        "fix": _fix(d.fix),
        "location": location(d.range.start),
        "message": d.message,
        "noqa_row": d.range.start.line,
        "url": d.url,
    }
    if d.related:
        item["related"] = related_items(d)
    return item


def location(position: Position) -> dict[str, int]:
    """`{row, column}`, both 1-based."""
    return {"row": position.line, "column": display_column(position.column)}


def _fix(fix: Fix | None) -> dict[str, object] | None:
    if fix is None:
        return None
    edits = [
        {"content": e.content, "location": location(e.range.start), "end_location": location(e.range.end)}
        for e in fix.edits
    ]
    return {"applicability": fix.applicability, "message": fix.title, "edits": edits}
