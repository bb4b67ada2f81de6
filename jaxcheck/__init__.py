"""jaxcheck: a static analyzer for JAX purity and tracing errors.

The public API is small: :func:`check_paths` lints files and folders, :func:`check_source`
lints one source text. Both return :class:`Diagnostic` value objects. In IPython and Jupyter,
`%load_ext jaxcheck` switches the runtime checks on for the session (see :mod:`jaxcheck.runtime_checks.kernel`).
"""

from __future__ import annotations

from typing import Any

from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range
from jaxcheck.analyzer.engine import CheckReport, check_paths, check_source
from jaxcheck.version import __version__


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jaxcheck`: the runtime checks on for the IPython session. Imports JAX only now; without
    it, a one-line UsageError."""
    try:
        from jaxcheck.runtime_checks.kernel import load
    except ModuleNotFoundError as exc:
        if exc.name != "jax":
            raise
        from IPython.core.error import UsageError

        from jaxcheck.extras import install_hint

        raise UsageError(f"jaxcheck: the runtime checks need JAX ({exc}): {install_hint('runtime')}") from None
    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext jaxcheck`: the runtime checks off, `%jaxcheck` removed."""
    from jaxcheck.runtime_checks.kernel import unload

    unload(ipython)


__all__ = ["CheckReport", "Diagnostic", "Position", "Range", "__version__", "check_paths", "check_source"]
