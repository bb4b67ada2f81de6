"""Runtime tests run on real JAX, on the CPU unless `JAXCHECK_TEST_PLATFORMS` names another platform (`cuda`
on a GPU machine); they are skipped when JAX is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
TEST_PLATFORMS = os.environ.get("JAXCHECK_TEST_PLATFORMS", "cpu")


def run_python(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `cwd`, importing this checkout's jaxcheck, JAX on the test platform (CPU by default;
    programs that force host devices with `XLA_FLAGS` run on the CPU)."""
    platform = "cpu" if "xla_force_host" in (env or {}).get("XLA_FLAGS", "") else TEST_PLATFORMS
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": platform, **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=300)


def run_jaxcheck(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m jaxcheck ARGS` in `cwd`, importing this checkout's jaxcheck."""
    return run_python(["-m", "jaxcheck", *args], cwd, env)


PLUGIN = "jaxcheck.runtime_checks.pytest_plugin"


def run_pytest(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `cwd`, importing this checkout's jaxcheck, with the plugin loaded: by its
    `pytest11` entry point when jaxcheck is installed with it, else with `-p` (both at once would clash)."""
    installed = any(point.value == PLUGIN for point in entry_points(group="pytest11"))
    return run_python(["-m", "pytest", *([] if installed else ["-p", PLUGIN]), *args], cwd, env)
