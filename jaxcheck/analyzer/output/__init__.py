"""Output formats: each is a pure function from diagnostics to text, registered by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.json import format_json
from jaxcheck.analyzer.output.text import format_text

Formatter = Callable[[Sequence[Diagnostic]], str]

FORMATTERS: dict[str, Formatter] = {
    "text": format_text,
    "json": format_json,
}

__all__ = ["FORMATTERS", "Formatter"]
