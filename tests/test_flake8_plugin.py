"""The flake8 plugin, exercised through real flake8 in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flake8")

BUGGY = "import jax\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return int(x)\n    return x\n"


def flake8(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "JAX", *args, "."],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )


def test_findings_use_flake8_format_and_columns(tmp_path: Path):
    (tmp_path / "a.py").write_text(BUGGY)
    result = flake8(tmp_path)
    assert result.returncode == 1, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines[0].startswith("./a.py:6:8: JAX301 ")
    assert lines[1].startswith("./a.py:7:16: JAX302 ")


def test_flake8_noqa_and_extend_ignore_apply(tmp_path: Path):
    (tmp_path / "a.py").write_text(BUGGY.replace("if x > 0:", "if x > 0:  # noqa: JAX301"))
    assert "JAX301" not in flake8(tmp_path).stdout
    assert "JAX301" in flake8(tmp_path, "--disable-noqa").stdout
    assert "JAX302" not in flake8(tmp_path, "--extend-ignore", "JAX302").stdout


def test_pyproject_rule_options_are_read(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextra-jit-decorators = ['mylib.compile']\n")
    (tmp_path / "a.py").write_text("from mylib import compile\n\n\n@compile\ndef f(x):\n    return int(x)\n")
    assert "JAX302" in flake8(tmp_path).stdout


def test_cross_module_tracing_works_per_file(tmp_path: Path):
    (tmp_path / "utils.py").write_text("def positive(v):\n    if v > 0:\n        return v\n    return 0.0\n")
    (tmp_path / "train.py").write_text("import jax\nfrom utils import positive\n\n\n@jax.jit\ndef step(x):\n"
                                       "    return positive(x)\n")
    assert "./utils.py:2:8: JAX301" in flake8(tmp_path).stdout


def test_deeply_nested_file_does_not_crash_flake8(tmp_path: Path):
    (tmp_path / "deep.py").write_text("x = " + " and ".join(["a"] * 12_000) + "\n")
    (tmp_path / "a.py").write_text(BUGGY)
    result = flake8(tmp_path)
    assert result.returncode == 1 and "a.py:6:8: JAX301" in result.stdout, result.stderr
