"""ruff's `json` and `json-lines` formats, field for field.

Each item: `cell` (the 1-based number of the notebook cell the finding is in, counting every cell as
ruff does; null outside notebooks), `code`, `end_location` and `location` (`{row, column}`, 1-based,
rows within the cell in a notebook), `filename`, `fix` (null or `{applicability, message, edits: [{content,
location, end_location}]}`), `message`, `noqa_row` (the line a `# noqa` comment for it goes on) and
`url`. Keys are sorted, as ruff prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.notebooks import Place
from jaxcheck.analyzer.output.context import PLAIN, OutputContext
from jaxcheck.analyzer.output.related import related_items


def format_json(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """A JSON list of ruff-shaped items (`context` maps notebook lines to cells)."""
    return json.dumps([json_item(d, context) for d in sorted(diagnostics)], indent=2, sort_keys=True) + "\n"


def format_json_lines(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """One ruff-shaped JSON object per line (`context` maps notebook lines to cells)."""
    return "".join(json.dumps(json_item(d, context), sort_keys=True) + "\n" for d in sorted(diagnostics))


def json_item(d: Diagnostic, context: OutputContext = PLAIN) -> dict[str, object]:
    """One diagnostic in ruff's JSON shape, plus `related` (the notes that explain it, see
    :func:`related_items`) when it has any: tools that read ruff's keys ignore it."""
    start = context.place(d.path, d.range.start)
    item: dict[str, object] = {
        "cell": start.cell,
        "code": d.code,
        "end_location": location(context.place(d.path, d.range.end)),
        "filename": d.path,
        "fix": _fix(d, context),
        "location": location(start),
        "message": d.message,
        "noqa_row": start.line,
        "url": d.url,
    }
    if d.related:
        item["related"] = related_items(d, context)
    return item


def location(place: Place) -> dict[str, int]:
    """`{row, column}`, both 1-based (the row within its cell in a notebook)."""
    return {"row": place.line, "column": display_column(place.column)}


def _fix(d: Diagnostic, context: OutputContext) -> dict[str, object] | None:
    fix = d.fix
    if fix is None:
        return None
    edits = [
        {"content": e.content, "location": location(context.place(d.path, e.range.start)),
         "end_location": location(context.place(d.path, e.range.end))}
        for e in fix.edits
    ]
    return {"applicability": fix.applicability, "message": fix.title, "edits": edits}
