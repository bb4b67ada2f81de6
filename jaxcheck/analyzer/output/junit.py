"""JUnit XML, for CI systems that show test reports: one testsuite per file, one failing testcase per finding."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext

# Characters XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def format_junit(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """`<testsuites>` > `<testsuite name=PATH>` > `<testcase>` with a `<failure>` carrying code and
    message; no findings gives an empty `<testsuites>` (`context` maps notebook lines to cells)."""
    ordered = sorted(diagnostics)
    root = ET.Element("testsuites", _counts("jaxcheck", len(ordered)))
    for path, group in groupby(ordered, key=lambda d: d.path):
        findings = list(group)
        suite = ET.SubElement(root, "testsuite", _counts(_clean(path), len(findings)))
        for d in findings:
            place = context.place(d.path, d.range.start)
            line, column = place.line, display_column(place.column)
            cell = f"cell {place.cell}, " if place.cell is not None else ""
            case = ET.SubElement(suite, "testcase", {
                "name": f"{d.code} ({d.name}) at {cell}line {line}, column {column}",
                "classname": _clean(path),
                "file": _clean(path),
                "line": str(line),
            })
            failure = ET.SubElement(case, "failure", {"type": d.code, "message": _clean(d.message)})
            failure.text = _clean(f"{context.label(d.path, d.range.start)}: {d.code} {d.message}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _counts(name: str, failures: int) -> dict[str, str]:
    return {"name": name, "tests": str(failures), "failures": str(failures), "errors": "0"}


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
