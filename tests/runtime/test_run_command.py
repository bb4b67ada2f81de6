"""`jaxcheck run`: exit status kept, `-m module`, usage errors and settings."""

from __future__ import annotations

from pathlib import Path

from tests.runtime.conftest import run_jaxcheck


def test_exit_status_and_arguments_are_the_programs(tmp_path: Path):
    (tmp_path / "prog.py").write_text("import sys\nprint(sys.argv[1:])\nsys.exit(int(sys.argv[1]))\n")
    result = run_jaxcheck(["run", "prog.py", "3", "--flag"], tmp_path)
    assert result.returncode == 3 and "['3', '--flag']" in result.stdout


def test_uncaught_exception_exits_1_with_its_traceback(tmp_path: Path):
    (tmp_path / "prog.py").write_text("raise KeyError('boom')\n")
    result = run_jaxcheck(["run", "prog.py"], tmp_path)
    assert result.returncode == 1 and "KeyError: 'boom'" in result.stderr


def test_run_module_in_raise_mode(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "main.py").write_text(
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    print(x)\n    return x\nf(jnp.ones(1))\n")
    result = run_jaxcheck(["run", "--mode", "raise", "-m", "pkg.main"], tmp_path)
    assert result.returncode == 1
    assert "RuntimeCheckError" in result.stderr and "main.py:4: JAX103" in result.stderr


def test_usage_and_configuration_errors_exit_2(tmp_path: Path):
    missing = run_jaxcheck(["run", "missing.py"], tmp_path)
    assert missing.returncode == 2 and "missing.py: no such file" in missing.stderr
    nothing = run_jaxcheck(["run"], tmp_path)
    assert nothing.returncode == 2 and "give a script" in nothing.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.runtime]\nretrace-budget = 0\n")
    (tmp_path / "prog.py").write_text("")
    bad = run_jaxcheck(["run", "prog.py"], tmp_path)
    assert bad.returncode == 2 and "runtime.retrace-budget" in bad.stderr and "Traceback" not in bad.stderr


def test_nans_flag_overrides_the_settings(tmp_path: Path):
    (tmp_path / "prog.py").write_text(
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.where(x > 0, jnp.log(x), 0.0)\n"
        "f(jnp.array([-1.0]))\n")
    quiet = run_jaxcheck(["run", "prog.py"], tmp_path)
    assert quiet.returncode == 0 and "JAX701" not in quiet.stderr
    loud = run_jaxcheck(["run", "--nans", "prog.py"], tmp_path)
    assert loud.returncode == 0 and "prog.py:4: RuntimeCheckWarning: JAX701" in loud.stderr, loud.stderr
