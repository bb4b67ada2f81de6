"""flake8-compatible suppression: `# noqa`, `# noqa: JAX301,JAX3` and file-level `# jaxcheck: noqa`.

A separate stage after the rules, so the flake8 adapter can leave noqa handling to flake8.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxcheck.analyzer.diagnostics import Diagnostic

# Same shape as flake8's: codes separated by commas and/or whitespace after an optional colon.
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    r"^\s*#\s*(?:jaxcheck|flake8):\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?\s*$",
    re.IGNORECASE,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

ALL_CODES: tuple[str, ...] = ()
"""An empty code tuple means 'every code' (a blanket noqa)."""


@dataclass(frozen=True, slots=True)
class Suppressions:
    """The noqa comments of one file: per line, and for the whole file (None when absent)."""

    lines: dict[int, tuple[str, ...]]
    whole_file: tuple[str, ...] | None

    @classmethod
    def scan(cls, lines: Sequence[str]) -> Suppressions:
        """Collect noqa comments from the file's physical lines (1-based line numbers)."""
        per_line: dict[int, tuple[str, ...]] = {}
        whole_file: tuple[str, ...] | None = None
        for number, line in enumerate(lines, start=1):
            if "noqa" not in line.lower():
                continue
            file_match = _FILE_NOQA.match(line)
            if file_match:
                whole_file = _codes(file_match.group("codes"))
                continue
            match = _NOQA.search(line)
            if match:
                per_line[number] = _codes(match.group("codes"))
        return cls(per_line, whole_file)

    def is_suppressed(self, diagnostic: Diagnostic) -> bool:
        """True when a noqa comment covers the diagnostic's code on its first line or file-wide."""
        if self.whole_file is not None and _covers(self.whole_file, diagnostic.code):
            return True
        codes = self.lines.get(diagnostic.range.start.line)
        return codes is not None and _covers(codes, diagnostic.code)

    def filter(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        return [d for d in diagnostics if not self.is_suppressed(d)]


def _codes(text: str | None) -> tuple[str, ...]:
    return ALL_CODES if not text else tuple(code.upper() for code in _CODE.findall(text))


def _covers(codes: tuple[str, ...], code: str) -> bool:
    return not codes or code.startswith(codes)
