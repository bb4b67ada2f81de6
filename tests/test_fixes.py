"""apply_fixes: pure text edits, applied from the end, overlapping fixes skipped whole."""

from __future__ import annotations

from jaxcheck.analyzer.diagnostics import Edit, Fix, Position, Range
from jaxcheck.analyzer.fixes import apply_fixes


def _fix(*edits: tuple[int, int, int, int, str]) -> Fix:
    return Fix(tuple(Edit(Range(Position(a, b), Position(c, d)), text) for a, b, c, d, text in edits), "safe", "t")


def test_edits_apply_against_original_positions():
    text = "x[0] = 1\ny[1] += 2\n"
    fixes = [_fix((1, 0, 1, 8, "x = x.at[0].set(1)")), _fix((2, 0, 2, 9, "y = y.at[1].add(2)"))]
    assert apply_fixes(text, fixes) == "x = x.at[0].set(1)\ny = y.at[1].add(2)\n"


def test_multi_edit_fix_and_insertion():
    text = "a b c"
    assert apply_fixes(text, [_fix((1, 0, 1, 1, "A"), (1, 4, 1, 5, "C"), (1, 2, 1, 2, "<"))]) == "A <b C"


def test_overlapping_fix_is_skipped_whole():
    text = "abcdef"
    fixes = [_fix((1, 1, 1, 3, "X")), _fix((1, 2, 1, 4, "Y"), (1, 5, 1, 6, "Z"))]
    assert apply_fixes(text, fixes) == "aXdef"


def test_adjacent_edits_both_apply_and_crlf_lines_count():
    text = "ab\r\ncd\r\n"
    fixes = [_fix((2, 0, 2, 1, "C")), _fix((2, 1, 2, 2, "D"))]
    assert apply_fixes(text, fixes) == "ab\r\nCD\r\n"


def test_no_fixes_is_identity():
    assert apply_fixes("x = 1\n", []) == "x = 1\n"
