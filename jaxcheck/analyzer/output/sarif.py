"""SARIF 2.1.0, the format GitHub code scanning and other static-analysis dashboards read.

Every registered rule is described in `tool.driver.rules` (summary, full documentation, docs URL);
each finding is a result with a 1-based region (in a notebook: lines within the cell, whose number is
the region's `properties.cell`, and the message starts with `cell N: `), a fix becomes `fixes[].artifactChanges`, and notes that
explain the finding become `relatedLocations` and one `codeFlows` thread ending at the finding.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING
from urllib.parse import quote

from jaxcheck.version import __version__
from jaxcheck.analyzer.diagnostics import PROJECT_URL, RULE_DOCS_URL, Diagnostic, Fix, Range, RelatedLocation, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext
from jaxcheck.analyzer.registry import all_rules

if TYPE_CHECKING:  # the rule module loads LibCST, which a run answered from the project index never imports
    from jaxcheck.analyzer.rule import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


def format_sarif(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """A SARIF log with one run; `ruleIndex` points into `tool.driver.rules` (`context` maps notebook
    lines to cells)."""
    rules = [_rule_descriptor(rule) for rule in all_rules()]
    index = {str(rule["id"]): position for position, rule in enumerate(rules)}
    run = {
        "tool": {"driver": {"name": "jaxcheck", "informationUri": PROJECT_URL, "version": __version__, "rules": rules}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index, context) for d in sorted(diagnostics)],
    }
    log = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def artifact_uri(path: str) -> str:
    """A relative path as a relative POSIX URI reference (`src/a%20b.py`); an absolute one as `file://`.
    The path's bytes are percent-encoded, so a name that is not valid UTF-8 gives a valid URI too."""
    posix = PurePath(path).as_posix()
    if Path(path).is_absolute():
        return "file://" + quote(os.fsencode(posix))
    return quote(os.fsencode(posix.removeprefix("./")))


def _rule_descriptor(rule: type[Rule]) -> dict[str, object]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": inspect.cleandoc(rule.__doc__ or rule.summary)},
        "helpUri": RULE_DOCS_URL.format(name=rule.name),
        "defaultConfiguration": {"enabled": rule.default_enabled, "level": "error"},
    }


def _result(d: Diagnostic, index: dict[str, int], context: OutputContext) -> dict[str, object]:
    uri = artifact_uri(d.path)
    result: dict[str, object] = {"ruleId": d.code}
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    region = _region(d.path, d.range, context)
    result |= {
        "level": "error",
        "message": {"text": _in_cell(d.message, region)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}],
    }
    if d.fix is not None:
        result["fixes"] = [_fix(d.path, d.fix, uri, context)]
    if d.related:
        result |= _related(d, uri, context)
    return result


def _related(d: Diagnostic, uri: str, context: OutputContext) -> dict[str, object]:
    """`relatedLocations` (each note with an id) and one `codeFlows` thread: the notes in order, then
    the finding itself."""
    def location(related: RelatedLocation) -> dict[str, object]:
        path = d.related_path(related)
        region = _region(path, related.range, context)
        return {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}, "region": region},
                "message": {"text": _in_cell(related.message, region)}}

    related_locations = [{"id": number, **location(r)} for number, r in enumerate(d.related)]
    steps = [{"location": location(r)} for r in d.related]
    region = _region(d.path, d.range, context)
    steps.append({"location": {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region},
                               "message": {"text": _in_cell(d.message, region)}}})
    return {"relatedLocations": related_locations, "codeFlows": [{"threadFlows": [{"locations": steps}]}]}


def _region(path: str, span: Range, context: OutputContext) -> dict[str, object]:
    """1-based; `endColumn` is the column just past the region, so an insertion has equal columns. In a
    notebook, lines within the cell, whose number is `properties.cell`."""
    start, end = context.place(path, span.start), context.place(path, span.end)
    region: dict[str, object] = {
        "startLine": start.line,
        "startColumn": display_column(start.column),
        "endLine": end.line,
        "endColumn": display_column(end.column),
    }
    if start.cell is not None:
        region["properties"] = {"cell": start.cell}
    return region


def _in_cell(message: str, region: dict[str, object]) -> str:
    """`message`, led by `cell N: ` when the region lies in a notebook cell."""
    properties = region.get("properties")
    return f"cell {properties['cell']}: {message}" if isinstance(properties, dict) else message


def _fix(path: str, fix: Fix, uri: str, context: OutputContext) -> dict[str, object]:
    replacements = [{"deletedRegion": _region(path, e.range, context), "insertedContent": {"text": e.content}}
                    for e in fix.edits]
    return {
        "description": {"text": f"{fix.title} ({fix.applicability} fix)"},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements}],
    }
