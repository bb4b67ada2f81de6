"""Shared helpers for the test suite."""

from __future__ import annotations

import textwrap
from pathlib import Path

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


def make_package(root: Path, modules: dict[str, str]) -> Path:
    """A project at `root` (with a pyproject.toml) holding package `pkg` with `modules` (dedented);
    returns `root`."""
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in modules.items():
        (package / name).write_text(textwrap.dedent(text))
    return root
