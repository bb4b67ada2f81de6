"""The default, ruff-like full output: the `concise` line, then the source line with its range underlined,
then a `note:` line per related location (why the code is traced, where a value changes).

```
src/model.py:6:8: JAX301 Python `if` needs a concrete bool ...
  |
6 |     if x > 0:
  |        ^^^^^
  |
  note: src/model.py:3:1: `f` is traced by `@jax.jit`
```
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.output.context import PLAIN, OutputContext, fix_marker, summary
from jaxcheck.analyzer.output.related import note_lines

TAB_SIZE = 4
SNIPPET_WIDTH = 160
"""Longer source lines are shown as a window around the finding: output stays linear in the input
even when one long line holds thousands of findings."""
_BOLD, _RED, _BLUE, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[34m", "\x1b[0m"


def format_text(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """Each diagnostic as a block (a snippet only when `context.sources` has its line), blocks
    separated by a blank line, then ruff's summary; ANSI colours only when `context.color`."""
    blocks = [_block(d, context) for d in sorted(diagnostics)]
    footer = summary(diagnostics, context)
    return "\n".join(blocks) + ("\n" if blocks and footer else "") + footer


def _block(diagnostic: Diagnostic, context: OutputContext) -> str:
    color = context.color
    start, end = diagnostic.range.start, diagnostic.range.end
    location = context.label(diagnostic.path, start)
    code = _paint(diagnostic.code, _BOLD + _RED, color)
    lines = [f"{_paint(location, _BOLD, color)}: {code} {fix_marker(diagnostic, context)}{diagnostic.message}"]
    first, last = context.place(diagnostic.path, start), context.place(diagnostic.path, end)
    number = str(first.line)
    source = context.sources.get(diagnostic.path, ())
    if 1 <= start.line <= len(source):
        line = source[start.line - 1]
        stop = last.column if end.line == start.line else len(line)
        indent = len(line[: first.column].expandtabs(TAB_SIZE))
        width = max(1, len(line[:stop].expandtabs(TAB_SIZE)) - indent)
        shown = line.expandtabs(TAB_SIZE)
        if len(shown) > SNIPPET_WIDTH:
            left = max(0, indent - SNIPPET_WIDTH // 4)
            cut = shown[left : left + SNIPPET_WIDTH]
            shown = ("..." if left else "") + cut + ("..." if left + SNIPPET_WIDTH < len(shown) else "")
            indent += (3 if left else 0) - left
            width = max(1, min(width, SNIPPET_WIDTH - (indent - (3 if left else 0))))
        gutter = _paint(" " * len(number) + " |", _BLUE, color)
        lines += [
            gutter,
            f"{_paint(number + ' |', _BLUE, color)} {shown}".rstrip(),
            f"{gutter} {' ' * indent}{_paint('^' * width, _BOLD + _RED, color)}",
            gutter,
        ]
    if diagnostic.fix is not None:
        lines.append(f"{' ' * len(number)} = help: {diagnostic.fix.title}")
    lines += note_lines(diagnostic, context)
    return "\n".join(lines) + "\n"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color else text
