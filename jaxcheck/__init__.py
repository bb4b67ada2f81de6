"""jaxcheck: a static analyzer for JAX purity and tracing errors.

The public API is small: :func:`check_paths` lints files and folders, :func:`check_source`
lints one source text. Both return :class:`Diagnostic` value objects.
"""

from __future__ import annotations

from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range
from jaxcheck.analyzer.engine import CheckReport, check_paths, check_source
from jaxcheck.version import __version__

__all__ = ["CheckReport", "Diagnostic", "Position", "Range", "__version__", "check_paths", "check_source"]
