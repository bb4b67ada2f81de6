"""jaxcheck: a static analyzer for JAX purity and tracing errors.

The public API is small: :func:`check_paths` lints files and folders, :func:`check_source`
lints one source text. Both return :class:`Diagnostic` value objects.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range
from jaxcheck.analyzer.engine import CheckReport, check_paths, check_source

try:
    __version__ = version("jaxcheck")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["CheckReport", "Diagnostic", "Position", "Range", "__version__", "check_paths", "check_source"]
