"""Diagnostics: small immutable value objects that hold no CST node and cross process boundaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Applicability = Literal["safe", "unsafe"]

RULE_DOCS_URL = "https://github.com/jaxcheck/jaxcheck/blob/main/docs/rules/{name}.md"


def display_column(column: int) -> int:
    """Internal 0-based columns become the 1-based columns every output format shows."""
    return column + 1


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A place in a file: `line` is 1-based, `column` is 0-based (LibCST and flake8 convention)."""

    line: int
    column: int


@dataclass(frozen=True, slots=True, order=True)
class Range:
    """A half-open span from `start` to `end`."""

    start: Position
    end: Position


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text in `range` with `content` (an insertion when the range is empty)."""

    range: Range
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A serializable fix: text edits that apply together. Only `safe` fixes keep the meaning for sure."""

    edits: tuple[Edit, ...]
    applicability: Applicability
    title: str


@dataclass(frozen=True, slots=True, order=True)
class Diagnostic:
    """One finding of one rule in one file. Ordered by path, then position, then code."""

    path: str
    range: Range
    code: str
    name: str
    message: str
    fix: Fix | None = field(default=None, compare=False)

    @property
    def url(self) -> str:
        """The documentation page of the rule that produced this diagnostic."""
        return RULE_DOCS_URL.format(name=self.name)


@dataclass(frozen=True, slots=True)
class FileError:
    """A file that could not be checked at all, or a rule that failed on it (exit code 2)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: error: {self.message}"
