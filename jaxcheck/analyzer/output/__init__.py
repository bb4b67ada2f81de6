"""Output formats: each is a pure function from diagnostics (and an :class:`OutputContext`) to text,
registered by name. The names and shapes follow ruff's `--output-format`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.concise import format_concise
from jaxcheck.analyzer.output.context import PLAIN, OutputContext, is_fixable, read_sources, summary
from jaxcheck.analyzer.output.github import format_github
from jaxcheck.analyzer.output.gitlab import format_gitlab
from jaxcheck.analyzer.output.grouped import format_grouped
from jaxcheck.analyzer.output.json import format_json, format_json_lines
from jaxcheck.analyzer.output.junit import format_junit
from jaxcheck.analyzer.output.pylint import format_pylint
from jaxcheck.analyzer.output.rdjson import format_rdjson
from jaxcheck.analyzer.output.sarif import format_sarif
from jaxcheck.analyzer.output.text import format_text


class Formatter(Protocol):
    """Render diagnostics as text; the same input always gives the same output."""

    def __call__(self, diagnostics: Sequence[Diagnostic], context: OutputContext = ..., /) -> str: ...


FORMATTERS: dict[str, Formatter] = {
    "text": format_text,
    "full": format_text,
    "concise": format_concise,
    "grouped": format_grouped,
    "json": format_json,
    "json-lines": format_json_lines,
    "github": format_github,
    "gitlab": format_gitlab,
    "pylint": format_pylint,
    "rdjson": format_rdjson,
    "sarif": format_sarif,
    "junit": format_junit,
}
"""`full` is ruff's name for `text`."""

# Formats that show source lines: the CLI reads the files of their diagnostics for them.
NEEDS_SOURCES = frozenset({"text", "full"})
# Formats for people: they end with the summary (`Found N errors.`, `All checks passed!`).
HUMAN_FORMATS = frozenset({"text", "full", "concise", "grouped"})

__all__ = ["FORMATTERS", "HUMAN_FORMATS", "NEEDS_SOURCES", "PLAIN", "Formatter", "OutputContext", "is_fixable",
           "read_sources", "summary"]
