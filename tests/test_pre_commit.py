"""The pre-commit hooks, run through `pre-commit try-repo` against a temporary git repository."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")
ROOT = Path(__file__).resolve().parent.parent
BUGGY = "import jax\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"
MUTATION = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\n"
NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
                       "source": ["import jax.numpy as jnp\n", "y = jnp.zeros(3)\n", "y[0] = 1.0"]}],
            "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _is_git_checkout(path: Path) -> bool:
    """True when `path` is the top of a git work tree (not an unpacked sdist or archive)."""
    result = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True)
    return result.returncode == 0 and Path(result.stdout.strip()).resolve() == path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not _is_git_checkout(ROOT):
        pytest.skip(f"{ROOT} is not a git checkout (an sdist or archive): `pre-commit try-repo` installs the "
                    "hooks from a git repository")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "test@example.com")
    _git(tmp_path, "config", "user.name", "test")
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-exclude = ['generated']\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "made.py").write_text(BUGGY)
    (tmp_path / "model.py").write_text(BUGGY)
    (tmp_path / "update.py").write_text(MUTATION)
    (tmp_path / "demo.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def _try_repo(repo: Path, hook: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pre-commit", "try-repo", str(ROOT), hook, "--all-files", "--verbose"],
        cwd=repo, capture_output=True, text=True, timeout=900,
    )


def test_check_hook_reports_findings_and_honours_excludes(repo: Path):
    result = _try_repo(repo, "jaxcheck")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "model.py:6:8: JAX301" in result.stdout
    assert "demo.ipynb:cell 1:3:1: JAX201" in result.stdout  # `types_or` takes jupyter files
    assert "made.py" not in result.stdout  # excluded in pyproject, although pre-commit names it


def test_fix_hook_rewrites_files(repo: Path):
    result = _try_repo(repo, "jaxcheck-fix")
    # pre-commit fails a hook that changed files; anything else (an install error) is shown, not hidden
    assert "(2 fixed, 1 remaining)" in result.stdout, result.stdout + result.stderr
    assert (repo / "update.py").read_text() == MUTATION.replace("x[0] = 1.0", "x = x.at[0].set(1.0)")
    fixed = json.loads((repo / "demo.ipynb").read_text())["cells"][0]["source"]
    assert fixed == ["import jax.numpy as jnp\n", "y = jnp.zeros(3)\n", "y = y.at[0].set(1.0)"]
