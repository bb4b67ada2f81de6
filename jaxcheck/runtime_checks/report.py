"""Runtime findings as jaxcheck :class:`Diagnostic` values, and what each mode does with them:
`raise` raises :class:`RuntimeCheckError`, `warn` issues a :class:`RuntimeCheckWarning` at the user's
line, `collect` only keeps them. Every mode keeps them in :attr:`Reporter.findings`."""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Literal

from jaxcheck.analyzer.diagnostics import PROJECT_URL, Diagnostic, Fix, Position, Range
from jaxcheck.analyzer.registry import rule_by_code_or_name

Mode = Literal["raise", "warn", "collect"]
RUNTIME_ONLY = {"JAX701": "nan-or-inf-produced", "JAX702": "pmap-axis-exceeds-devices"}
"""Checks with no static rule (JAX7xx: only a run can see values and devices); documented in docs/runtime.md."""


class RuntimeCheckWarning(UserWarning):
    """A runtime finding in `warn` mode; `.diagnostic` holds it."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(headline(diagnostic, with_path=False))
        self.diagnostic = diagnostic


class RuntimeCheckError(RuntimeError):
    """A runtime finding in `raise` mode; `.diagnostic` holds it."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(headline(diagnostic))
        self.diagnostic = diagnostic


def diagnostic(code: str, where: tuple[str, int] | None, message: str, fix: str | None = None) -> Diagnostic:
    """A diagnostic of rule `code` at the start of line `where` (`("<unknown>", 0)` when unknown); `fix`
    is the concrete change to make, carried as the title of a fix without edits."""
    rule = rule_by_code_or_name(code)
    name = rule.name if rule is not None else RUNTIME_ONLY[code]
    path, line = where if where is not None else ("<unknown>", 0)
    start = Position(line, 0)
    carried = Fix(edits=(), applicability="unsafe", title=fix) if fix else None
    return Diagnostic(display_path(path), Range(start, start), code, name, message, carried)


def display_path(path: str) -> str:
    """`path` relative to the working directory when it is a file below it, else unchanged."""
    if path.startswith("<"):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative.startswith("..") else relative


def url_of(diag: Diagnostic) -> str:
    """The rule page of `diag`; runtime-only checks point into docs/runtime.md."""
    if diag.code in RUNTIME_ONLY:
        return f"{PROJECT_URL}/blob/main/docs/runtime.md#{diag.name}"
    return diag.url


def headline(diag: Diagnostic, with_path: bool = True) -> str:
    """`path:line: CODE message Fix: ... [url]`, one line (without the place when `with_path` is False:
    a warning shows it already)."""
    fix = f" Fix: {diag.fix.title}" if diag.fix is not None else ""
    place = f"{diag.path}:{diag.range.start.line}: " if with_path else ""
    return f"{place}{diag.code} {diag.message}{fix} [{url_of(diag)}]"


MESSAGES_PER_LINE = 4
"""Distinct findings kept per (code, source line); later ones only add to the line's count."""
LINES_KEPT = 10_000
"""(code, source line) pairs counted; findings at further lines are counted in `Reporter.dropped`."""


@dataclass
class Reporter:
    """Receives findings and acts on `mode` once per finding kept. Repeats are collapsed per source
    line: `counts[(code, path, line)]` counts every report there, and at most :data:`MESSAGES_PER_LINE`
    distinct messages of a line are kept in :attr:`findings`, for at most :data:`LINES_KEPT` lines, so
    a bad index hit 100,000 times (each time another value) holds one line's worth of memory."""

    mode: Mode = "warn"
    findings: list[Diagnostic] = field(default_factory=list)
    counts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    dropped: int = 0
    _kept: dict[tuple[str, str, int], set[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _keep(self, diag: Diagnostic) -> bool:
        """Count `diag`; True when it is a new finding to keep (and act on)."""
        line = (diag.code, diag.path, diag.range.start.line)
        with self._lock:
            if line not in self.counts and len(self.counts) >= LINES_KEPT:
                self.dropped += 1
                return False
            self.counts[line] = self.counts.get(line, 0) + 1
            messages = self._kept.setdefault(line, set())
            if diag.message in messages or len(messages) >= MESSAGES_PER_LINE:
                return False
            messages.add(diag.message)
            self.findings.append(diag)
            return True

    def emit(self, diag: Diagnostic) -> None:
        """Record `diag`; warn or raise as the mode says when it is kept (see the class docstring)."""
        if not self._keep(diag):
            return
        if self.mode == "raise":
            raise RuntimeCheckError(diag)
        if self.mode == "warn":
            warnings.warn_explicit(RuntimeCheckWarning(diag), RuntimeCheckWarning, diag.path, diag.range.start.line)

    def note(self, diag: Diagnostic) -> str:
        """Record `diag` (never raising: it annotates an exception already on its way) and return the
        note to attach to that exception."""
        self._keep(diag)
        return "jaxcheck: " + headline(diag)

    def count(self, diag: Diagnostic) -> int:
        """How many times findings were reported at `diag`'s code and line."""
        return self.counts.get((diag.code, diag.path, diag.range.start.line), 0)


def summary(findings: list[Diagnostic], counts: dict[tuple[str, str, int], int] | None = None) -> str:
    """Findings grouped by code, then by source line, with counts (`counts` as in :class:`Reporter`: a
    line reported more than once says how often); "" when there are none."""
    if not findings:
        return ""
    lines = [f"jaxcheck runtime: {len(findings)} finding{'s' if len(findings) != 1 else ''}"]
    for code in sorted({d.code for d in findings}):
        group = [d for d in findings if d.code == code]
        lines.append(f"{code} {group[0].name} ({len(group)}) [{url_of(group[0])}]")
        for diag in sorted(group):
            fix = f" Fix: {diag.fix.title}" if diag.fix is not None else ""
            times = (counts or {}).get((diag.code, diag.path, diag.range.start.line), 1)
            repeated = f" (reported {times} times at this line)" if times > 1 else ""
            lines.append(f"  {diag.path}:{diag.range.start.line}: {diag.message}{repeated}{fix}")
    return "\n".join(lines) + "\n"
