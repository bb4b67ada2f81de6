"""Tracing propagates across modules of one project, also when only one file is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck import check_paths

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
