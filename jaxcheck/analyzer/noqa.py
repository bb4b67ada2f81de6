"""Editing `# noqa` comments: `--add-noqa` (add one for each finding, merging with an existing
`# noqa: X`) and the unused-noqa check (JAX002: codes in a `# noqa: ...` that suppress nothing).

Comments are found with :mod:`tokenize`, so a `#` inside a string is never taken for one, and a line
whose end is inside a multi-line string or continued with a backslash gets no comment.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, Fix, Position, Range
from jaxcheck.analyzer.source import source_lines

UNUSED_NOQA_CODE = "JAX002"
UNUSED_NOQA_NAME = "unused-noqa"
_NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_NOT_SUPPRESSIBLE = frozenset({"JAX001"})
"""A syntax error cannot be suppressed line by line (the file does not parse); use `# jaxcheck: noqa`."""


_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
"""A line as Python numbers them, with its line break (form feed, `\x1c`, U+2028 and such break none)."""
_BLANKS = " \t\f"
"""The blanks Python allows between tokens: those ending a line give way to the added comment."""


def add_noqa(text: str, diagnostics: Iterable[Diagnostic]) -> tuple[str, int]:
    """`text` with `# noqa: CODE` on each diagnostic's line (codes sorted, merged into an existing
    `# noqa: X`), and how many lines changed. Lines that cannot hold a comment are left alone. As ruff
    does, a new comment replaces the blanks (spaces, tabs, form feeds) ending its line with two spaces;
    every other character of the text is kept."""
    wanted: dict[int, set[str]] = {}
    for d in diagnostics:
        if d.code not in _NOT_SUPPRESSIBLE:
            wanted.setdefault(d.range.start.line, set()).add(d.code)
    comments, blocked = _comment_lines(text)
    if comments is None:
        return text, 0
    lines = _PHYSICAL_LINE.findall(text)
    changed = 0
    for number, codes in sorted(wanted.items()):
        if number in blocked or not 1 <= number <= len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        column = comments.get(number)
        match = _NOQA.search(body, column) if column is not None else None
        if match is not None:
            existing = _codes(match.group("codes"))
            if not existing:
                continue  # a blanket noqa already covers everything
            new = [code for code in sorted(codes) if not code.startswith(tuple(existing))]
            if not new:
                continue
            body = body[: match.start()] + "# noqa: " + ", ".join([*existing, *new]) + body[match.end():]
        else:
            body = body.rstrip(_BLANKS) + "  # noqa: " + ", ".join(sorted(codes))
        lines[number - 1] = body + ending
        changed += 1
    return "".join(lines), changed


def unused_noqa(path: str, text: str, diagnostics: Sequence[Diagnostic], checked: Iterable[str]) -> list[Diagnostic]:
    """JAX002 findings: `# noqa: CODE` entries that matched none of `diagnostics` (everything the rules
    found, before suppression). Only codes of rules in `checked` (the ones that ran on the file) count:
    a code of another tool, or of a rule not enabled, may still be needed. Blanket `# noqa` comments
    are left alone for the same reason."""
    checked = tuple(checked)
    comments, _ = _comment_lines(text)
    if not comments:
        return []
    by_line: dict[int, list[str]] = {}
    for d in diagnostics:
        by_line.setdefault(d.range.start.line, []).append(d.code)
    lines = source_lines(text)
    found = []
    for number, column in sorted(comments.items()):
        line = lines[number - 1]
        match = _NOQA.search(line, column)
        if match is None or not match.group("codes"):
            continue
        codes = _codes(match.group("codes"))
        hits = by_line.get(number, [])
        unused = [c for c in codes if any(code.startswith(c) for code in checked)
                  and not any(hit.startswith(c) for hit in hits)]
        if unused:
            found.append(_unused_diagnostic(path, number, line, match, codes, unused))
    return found


def _unused_diagnostic(path: str, number: int, line: str, match: re.Match[str], codes: list[str],
                       unused: list[str]) -> Diagnostic:
    kept = [c for c in codes if c not in unused]
    start, end = match.start(), match.end()
    if kept:
        title, content = "Remove the unused codes", "# noqa: " + ", ".join(kept)
    elif line[end:].strip():
        title, content = "Remove the unused `noqa` directive", "#"
    else:
        title, content, start = "Remove the unused `noqa` directive", "", len(line[:start].rstrip())
    span = Range(Position(number, match.start()), Position(number, end))
    edit = Edit(Range(Position(number, start), Position(number, end)), content)
    listed = ", ".join(f"`{code}`" for code in unused)
    return Diagnostic(path, span, UNUSED_NOQA_CODE, UNUSED_NOQA_NAME,
                      f"unused `noqa` directive (unused: {listed})", Fix((edit,), "safe", title))


def _codes(text: str | None) -> list[str]:
    return [] if not text else [code.upper() for code in _CODE.findall(text)]


def _comment_lines(text: str) -> tuple[dict[int, int] | None, set[int]]:
    """The column of each line's comment, and the lines whose end cannot take one (inside a multi-line
    string, or continued with a backslash); (None, set()) when the text does not tokenize."""
    comments: dict[int, int] = {}
    blocked: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments.setdefault(token.start[0], token.start[1])
            elif token.start[0] != token.end[0] and token.type not in (tokenize.NL, tokenize.NEWLINE):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return None, set()
    for number, line in enumerate(text.splitlines(), start=1):
        if line.endswith("\\") and number not in comments:
            blocked.add(number)
    return comments, blocked
