"""Shared helpers for the test suite."""

from __future__ import annotations

import textwrap

import pytest

from jaxcheck import check_source
from jaxcheck.analyzer.diagnostics import Diagnostic


def findings(source: str | bytes, code: str | None = None) -> list[Diagnostic]:
    """Diagnostics of `source` (dedented when text), optionally only those of `code`."""
    if isinstance(source, str):
        source = textwrap.dedent(source)
    report = check_source(source)
    assert not report.errors, report.errors
    return [d for d in report.diagnostics if code is None or d.code == code]


@pytest.fixture
def lint():
    return findings
