"""GitLab Code Quality report (a subset of the Code Climate spec), as ruff writes it: a JSON list of
`{check_name, description, fingerprint, location: {path, positions: {begin, end}}, severity}`.

The fingerprint identifies a finding across runs (GitLab compares the merge request's report with the
target branch's): a hash of path, code and message, plus the number of earlier identical findings in
the file so that two equal findings stay distinct. It does not use the line, so moving code does not
turn an old finding into a new one.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.notebooks import Place
from jaxcheck.analyzer.output.context import PLAIN, OutputContext


def format_gitlab(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """The report: a JSON list, `[]` when clean (`context` maps notebook lines to cells: lines are then
    within the finding's cell, and the description starts with `cell N: `)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    items = []
    for d in sorted(diagnostics):
        path = PurePath(d.path).as_posix().removeprefix("./")
        key = (path, d.code, d.message)
        digest = hashlib.sha256("\0".join((*key, str(seen[key]))).encode("utf-8", "surrogateescape")).hexdigest()
        seen[key] += 1
        begin, end = context.place(d.path, d.range.start), context.place(d.path, d.range.end)
        cell = f"cell {begin.cell}: " if begin.cell is not None else ""
        items.append({
            "check_name": d.code,
            "description": f"{cell}{d.code}: {d.message}",
            "fingerprint": digest[:16],
            "location": {"path": path, "positions": {"begin": _position(begin), "end": _position(end)}},
            "severity": "major",
        })
    return json.dumps(items, indent=2, sort_keys=True) + "\n"


def _position(place: Place) -> dict[str, int]:
    return {"line": place.line, "column": display_column(place.column)}
