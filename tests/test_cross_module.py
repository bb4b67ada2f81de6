"""Tracing propagates across modules of one project, also when only one file is checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck import check_paths

REPOSITORY = Path(__file__).resolve().parent.parent

TRAIN = """
    import jax
    from .utils import clip_positive
    from pkg import layers

    @jax.jit
    def step(params, x):
        y = layers.dense(params, x)
        return clip_positive(x * y)
"""
UTILS = """
    def clip_positive(v):
        if v > 0:
            return v
        return 0.0

    def unused(v):
        if v > 0:
            return v
        return 0.0
"""
LAYERS = """
    def dense(params, x):
        n = int(x)
        return params * n
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_package(tmp_path, {"train.py": TRAIN, "utils.py": UTILS, "layers.py": LAYERS})


def _codes(report, name: str) -> list[tuple[str, int]]:
    return [(d.code, d.range.start.line) for d in report.diagnostics if d.path.endswith(name)]


def test_helpers_in_other_modules_are_traced(project: Path):
    report = check_paths([project / "pkg"])
    assert not report.errors
    assert _codes(report, "utils.py") == [("JAX301", 3)]
    assert _codes(report, "layers.py") == [("JAX302", 3)]


def test_checking_one_helper_file_still_knows_its_callers(project: Path):
    report = check_paths([project / "pkg" / "utils.py"])
    assert _codes(report, "utils.py") == [("JAX301", 3)]
    assert report.files_checked == 1
    assert all(d.path.endswith("utils.py") for d in report.diagnostics)


def test_without_the_caller_the_helper_is_clean(project: Path):
    (project / "pkg" / "train.py").write_text("import jax\n")
    assert check_paths([project / "pkg" / "utils.py"]).diagnostics == []


def test_reexported_helper_is_followed(project: Path):
    (project / "pkg" / "__init__.py").write_text("from .utils import clip_positive\n")
    (project / "pkg" / "train.py").write_text(
        "import jax\nimport pkg\n\n@jax.jit\ndef step(x):\n    return pkg.clip_positive(x)\n"
    )
    assert _codes(check_paths([project / "pkg"]), "utils.py") == [("JAX301", 3)]


def test_module_level_code_is_not_the_package_function_keyed_like_its_module(tmp_path: Path):
    root = make_package(tmp_path, {
        "n.py": "def h(v):\n    return v\n",
        "m.py": "import jax.numpy as jnp\nfrom pkg.n import h\n\nh(1)\ny = jnp.zeros(3)\nif y.sum() > 0:\n    print(y)\n",
    })
    (root / "pkg" / "__init__.py").write_text("import jax\n\n@jax.jit\ndef m(x):\n    return x\n")
    assert [(Path(d.path).name, d.code) for d in check_paths([root]).diagnostics] == []


MUTUALLY_RECURSIVE = """
import jax

def a(x, n):
    if n:
        return b(x, n - 1)
    return x

def b(x, n):
    return a(x, n - 1)

@jax.jit
def f(x):
    u = a(x, 3)
    if u > 0:
        pass
    v = b(x, 3)
    if v > 0:
        pass
    return x
"""


def test_findings_do_not_depend_on_the_hash_seed(tmp_path: Path):
    """Mutually recursive helpers: answers computed past a cut cycle are not memoized, so the order a
    set of dependencies is walked in (string hashing is randomized per process) changes nothing."""
    (tmp_path / "m.py").write_text(MUTUALLY_RECURSIVE)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    runs = set()
    for seed in ("0", "3", "5"):
        command = [sys.executable, "-m", "jaxcheck", "check", "--no-cache", "--output-format", "concise", str(tmp_path)]
        result = subprocess.run(command, capture_output=True, text=True, check=False,
                                env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPOSITORY)})
        runs.add(result.stdout)
    assert len(runs) == 1 and next(iter(runs)).count("JAX301") == 2


SCRIPT_STYLE = """
    import jax
    import jax.numpy as jnp

    mean = jnp.zeros(3)

    @jax.jit
    def normalize(x):
        return x - mean

    out = normalize(jnp.ones(3))
    mean = None
"""


def test_a_store_after_the_modules_last_call_goes_stale_only_when_another_module_calls_the_reader(tmp_path: Path):
    root = make_package(tmp_path, {"stats.py": SCRIPT_STYLE})
    assert check_paths([root / "pkg" / "stats.py"]).diagnostics == []  # nothing calls `normalize` afterwards
    (root / "pkg" / "use.py").write_text("from pkg.stats import normalize\n\ndef run(x):\n    return normalize(x)\n")
    report = check_paths([root / "pkg" / "stats.py"])  # an importer may call it after `mean = None`
    assert [(d.code, d.range.start.line) for d in report.diagnostics] == [("JAX101", 9)]
