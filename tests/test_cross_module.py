"""Tracing propagates across modules of one project, also when only one file is checked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck import check_paths
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import Linter

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


ENERGY = """
    import jax.numpy as jnp

    def kinetic(v):
        return 0.5 * jnp.sum(v ** 2)

    def count(v):
        return len(v)
"""
RESCALE = """
    import jax
    from pkg import energy

    @jax.jit
    def rescale(v):
        ke = energy.kinetic(v)
        if ke > 1.0:
            v = v / 2
        if energy.count(v) > 1:
            v = v * 2
        return v * float(ke)
"""


def test_what_a_helper_of_another_module_returns_from_a_tracer_is_traced(tmp_path: Path):
    """`energy.kinetic(v)` returns an array computed from the tracer: branching on it raises, as it
    does for a helper of the same module; `len(v)` is a Python int, traced or not."""
    root = make_package(tmp_path, {"energy.py": ENERGY, "physics.py": RESCALE})
    assert _codes(check_paths([root]), "physics.py") == [("JAX301", 8), ("JAX302", 12)]
    (root / "pkg" / "__init__.py").write_text("from .energy import kinetic\n")  # through a re-export
    (root / "pkg" / "physics.py").write_text(textwrap.dedent(RESCALE).replace("energy.kinetic", "pkg.kinetic")
                                             .replace("from pkg import energy", "import pkg\nfrom pkg import energy"))
    assert _codes(check_paths([root]), "physics.py") == [("JAX301", 9), ("JAX302", 13)]


def test_a_cached_caller_is_linted_again_when_the_helper_of_another_module_changes_what_it_returns(tmp_path: Path):
    root = make_package(tmp_path, {"pick.py": "def pick(a, b):\n    return a\n",
                                   "step.py": "import jax\nfrom pkg.pick import pick\n\n@jax.jit\ndef step(v):\n"
                                              "    if pick(v, 1.0) > 0:\n        v = -v\n    return v\n"})
    cache = tmp_path / "cache"
    assert _codes(Linter(Configuration()).check_paths([root], cache_dir=cache), "step.py") == [("JAX301", 6)]
    (root / "pkg" / "pick.py").write_text("def pick(a, b):\n    return b\n")
    assert _codes(Linter(Configuration()).check_paths([root], cache_dir=cache), "step.py") == []
    (root / "pkg" / "pick.py").write_text("def pick(a, b):\n    return a\n")
    assert _codes(Linter(Configuration()).check_paths([root / "pkg" / "step.py"], cache_dir=cache),
                  "step.py") == [("JAX301", 6)]


def test_checking_one_file_knows_what_the_functions_it_imports_do(tmp_path: Path):
    """A pre-commit hook or an editor checks the changed file alone: what it reads of the modules it
    imports (a helper that draws from its key, through a re-export) is read from them, so it gets the
    findings of a whole-project run."""
    root = make_package(tmp_path, {
        "helpers.py": "import jax\n\ndef noise(key, shape):\n    return jax.random.normal(key, shape)\n",
        "train.py": "from pkg import noise\n\ndef run(key):\n    return noise(key, (3,)) + noise(key, (3,))\n",
    })
    (root / "pkg" / "__init__.py").write_text("from .helpers import noise\n")
    train = root / "pkg" / "train.py"
    assert _codes(check_paths([root]), "train.py") == [("JAX401", 4)]
    assert _codes(check_paths([train]), "train.py") == [("JAX401", 4)]
    in_editor = Linter(Configuration()).check_file_in_project(train, train.read_bytes())
    assert [(d.code, d.range.start.line) for d in in_editor.diagnostics] == [("JAX401", 4)]
