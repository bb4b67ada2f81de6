"""ruff's `grouped` format: each file's name, then its findings as aligned `line:col CODE [*] message`
lines (`cell N:line:col` in a notebook), a blank line after each file, then the summary.

```
src/model.py:
   7:8  JAX301 Python `if` needs a concrete bool ...
  13:5  JAX201 [*] item assignment on a JAX array

Found 2 errors.
[*] 1 fixable with the `--fix` option.
```
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from jaxcheck.analyzer.diagnostics import Diagnostic, display_column
from jaxcheck.analyzer.output.context import PLAIN, OutputContext, fix_marker, summary


def format_grouped(diagnostics: Sequence[Diagnostic], context: OutputContext = PLAIN) -> str:
    """Findings grouped by file, line and column numbers aligned within a file."""
    blocks: list[str] = []
    for path, group in groupby(sorted(diagnostics), key=lambda d: d.path):
        findings = list(group)
        places = [context.place(path, d.range.start) for d in findings]
        rows = [(f"cell {p.cell}:" if p.cell is not None else "") + str(p.line) for p in places]
        columns = [str(display_column(p.column)) for p in places]
        row_width, column_width = max(map(len, rows)), max(map(len, columns))
        lines = [f"{path}:"]
        for d, row, column in zip(findings, rows, columns):
            lines.append(f"  {row.rjust(row_width)}:{column.ljust(column_width)} {d.code} "
                         f"{fix_marker(d, context)}{d.message}")
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks) + summary(diagnostics, context)
