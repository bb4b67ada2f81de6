"""Shared helpers for the test suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxcheck import check_source
from jaxcheck.analyzer.config import Settings
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.registry import rule_by_code_or_name, selected_codes


if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # A shell without job control starts background commands with SIGINT ignored, and the programs the
    # tests start would inherit that (a Python started so never raises KeyboardInterrupt): the tests of
    # Ctrl-C need the disposition a terminal gives. A handler of ours is reset to the default on exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)


def findings(source: str | bytes, code: str | None = None, also: str | None = None) -> list[Diagnostic]:
    """Diagnostics of `source` (dedented when text), optionally only those of `code`. The default rules run,
    plus `code` and `also` when they are off by default (the opinionated 9xx rules)."""
    if isinstance(source, str):
        source = textwrap.dedent(source)
    extra = tuple(c for c in (code, also) if c is not None and not rule_by_code_or_name(c).default_enabled)
    settings = Settings(select=tuple(sorted(selected_codes(None, ()))) + extra) if extra else None
    report = check_source(source, settings=settings)
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


REPOSITORY = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """Run `python -m jaxcheck ARGS` in `cwd` in a fresh process, importing this checkout's jaxcheck
    (`env` defaults to :func:`checkout_environment`); output is decoded with `surrogateescape` (file
    names need not be UTF-8)."""
    return subprocess.run(
        [sys.executable, "-m", "jaxcheck", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        errors="surrogateescape", env=env or checkout_environment(),
    )


def checkout_environment() -> dict[str, str]:
    """The environment with this checkout first on PYTHONPATH (so subprocesses test this code)."""
    paths = [str(REPOSITORY), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
