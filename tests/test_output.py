"""Snapshot tests of every output format (update with JAXCHECK_UPDATE_SNAPSHOTS=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, Fix, Position, Range, display_column
from jaxcheck.analyzer.output import FORMATTERS

SNAPSHOTS = Path(__file__).parent / "snapshots"
DIAGNOSTICS = [
    Diagnostic("src/model.py", Range(Position(6, 7), Position(6, 12)), "JAX301", "python-branch-on-tracer",
               "Python `if` needs a concrete bool but the value is traced under jax.jit; use `jnp.where`"),
    Diagnostic("src/model.py", Range(Position(9, 0), Position(9, 5)), "JAX001", "syntax-error",
               "syntax error: '(' was never closed"),
    Diagnostic("src/model.py", Range(Position(12, 4), Position(12, 14)), "JAX201", "in-place-array-update",
               "item assignment on a JAX array", Fix((Edit(Range(Position(12, 4), Position(12, 14)),
                                                          "x = x.at[0].set(1)"),), "safe", "Use `x.at[...].set`")),
]


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_format_snapshot(name: str):
    rendered = FORMATTERS[name](DIAGNOSTICS)
    snapshot = SNAPSHOTS / f"output.{name}"
    if os.environ.get("JAXCHECK_UPDATE_SNAPSHOTS"):
        snapshot.write_text(rendered)
    assert rendered == snapshot.read_text()


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_no_diagnostics_renders_something_parseable(name: str):
    rendered = FORMATTERS[name]([])
    assert rendered in ("", "[]\n")


def test_columns_are_shown_one_based():
    assert display_column(0) == 1
