"""jaxcheck's runtime companion: JAX transforms that check while the code runs (needs JAX 0.10:
`pip install 'jax>=0.10'`, or `pip install '.[runtime]'` in a jaxcheck checkout).

- Drop-in transforms: `jaxcheck.runtime.jit`, `pmap`, `grad`, `value_and_grad`, `vmap`.
- `with jaxcheck.runtime.checking(mode="warn", nans=False, index_checks=False, ...) as findings:` patches the `jax`
  transforms for a block; `install()`/`uninstall()` do the same without a block.
- `jaxcheck run script.py` and `pytest --jaxcheck` switch it on without editing code.
- `traces(f)`: how many times JAX traced `f` under the checks, and what changed each time.

Findings are :class:`jaxcheck.Diagnostic` values with the static analyzer's codes and rule pages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.runtime_checks.patching import install as _install
from jaxcheck.runtime_checks.patching import uninstall as _uninstall
from jaxcheck.runtime_checks.report import Mode, RuntimeCheckError, RuntimeCheckWarning
from jaxcheck.runtime_checks.retrace import TraceHistory, TraceRecord
from jaxcheck.runtime_checks.session import history_of
from jaxcheck.runtime_checks.wrappers import grad, jit, pmap, value_and_grad, vmap


def install(settings: RuntimeSettings | None = None, **overrides: Any) -> list[Diagnostic]:
    """Patch the `jax` transforms with checked ones; settings are `settings` (default: the defaults)
    updated with `overrides` (the `[tool.jaxcheck.runtime]` keys, snake_case). Returns the list the
    session's findings are collected into."""
    base = settings or RuntimeSettings()
    chosen = RuntimeSettings.model_validate({**base.model_dump(), **overrides})
    return _install(chosen).reporter.findings


def uninstall() -> list[Diagnostic]:
    """Undo the innermost :func:`install` (reading pending NaN flags first); return its findings."""
    return _uninstall().reporter.findings


@contextlib.contextmanager
def checking(mode: Mode = "warn", nans: bool = False, retrace_budget: int = 10, index_checks: bool = False,
             **overrides: Any) -> Iterator[list[Diagnostic]]:
    """Check the block: the `jax` transforms are patched inside it. Yields the list of findings (filled as
    they occur; NaN flags and bounds tables still pending are read on exit). Keywords as in
    `[tool.jaxcheck.runtime]`; `index_checks=True` reports out-of-bounds indexing (JAX203)."""
    findings = install(mode=mode, nans=nans, retrace_budget=retrace_budget, index_checks=index_checks, **overrides)
    try:
        yield findings
    finally:
        uninstall()


def traces(fun: Any) -> TraceHistory:
    """How many times JAX traced `fun` (the user's function, or a checked or bare transform of it) in the
    active session, or else the last one that ended: `.count`, and `.records` (the latest 32: each
    trace's signature and what changed since the one before: shapes, dtypes, weak types, static values,
    callables). Counted during JAX's own traces: reading it traces nothing. A fresh `jax.jit(lambda ...)`
    shares its history with the other lambdas of the same source line (they have one code object)."""
    return history_of(fun)


__all__ = ["RuntimeCheckError", "RuntimeCheckWarning", "TraceHistory", "TraceRecord", "checking", "grad", "install",
           "jit", "pmap", "traces", "uninstall", "value_and_grad", "vmap"]
