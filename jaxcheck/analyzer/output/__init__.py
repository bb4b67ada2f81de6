"""Output formats: each is a pure function from diagnostics (and an :class:`OutputContext`) to text,
registered by name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.concise import format_concise
from jaxcheck.analyzer.output.context import PLAIN, OutputContext, read_sources
from jaxcheck.analyzer.output.github import format_github
from jaxcheck.analyzer.output.json import format_json
from jaxcheck.analyzer.output.junit import format_junit
from jaxcheck.analyzer.output.sarif import format_sarif
from jaxcheck.analyzer.output.text import format_text


class Formatter(Protocol):
    """Render diagnostics as text; the same input always gives the same output."""

    def __call__(self, diagnostics: Sequence[Diagnostic], context: OutputContext = ..., /) -> str: ...


FORMATTERS: dict[str, Formatter] = {
    "text": format_text,
    "concise": format_concise,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
    "junit": format_junit,
}

# Formats that show source lines: the CLI reads the files of their diagnostics for them.
NEEDS_SOURCES = frozenset({"text"})

__all__ = ["FORMATTERS", "NEEDS_SOURCES", "PLAIN", "Formatter", "OutputContext", "read_sources"]
