"""The static half never imports JAX: `jaxcheck`, its CLI, analyzer and rules load without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_static_half_does_not_import_jax():
    code = ("import sys, jaxcheck, jaxcheck.cli, jaxcheck.analyzer.registry, jaxcheck.flake8_plugin, "
            "jaxcheck.runtime_checks.pytest_plugin; jaxcheck.analyzer.registry.all_rules(); "
            "sys.exit(1 if 'jax' in sys.modules else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr or "jax was imported"
