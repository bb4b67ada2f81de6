"""Applying fixes to source text: pure, position-based, never partial within one fix."""

from __future__ import annotations

import re
from collections.abc import Iterable

from jaxcheck.analyzer.diagnostics import Fix, Position

_LINE_END = re.compile(r"\r\n|\r|\n")


def apply_fixes(text: str, fixes: Iterable[Fix]) -> str:
    """`text` with the edits of `fixes` applied. Fixes are taken in order; a fix with an edit that
    overlaps an edit already accepted is skipped whole. Edits are applied from the end of the text,
    so positions (1-based lines, 0-based columns in characters) refer to the original text."""
    starts = _line_starts(text)
    accepted: list[tuple[int, int, str]] = []
    for fix in fixes:
        spans = [(_offset(starts, e.range.start), _offset(starts, e.range.end), e.content) for e in fix.edits]
        if any(_overlaps(span, other) for span in spans for other in accepted):
            continue
        if any(_overlaps(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :]):
            continue
        accepted.extend(spans)
    for start, end, content in sorted(accepted, key=lambda span: (span[0], span[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text


def _line_starts(text: str) -> list[int]:
    return [0, *(match.end() for match in _LINE_END.finditer(text))]


def _offset(starts: list[int], position: Position) -> int:
    return starts[position.line - 1] + position.column


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    """Two spans conflict when they share text, or when both insert at the same point."""
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] == b[0] == b[1])

