"""Worker processes (`-j`) give exactly the in-process results, and a crashing worker loses no file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck.analyzer import parallel
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.rule import Rule

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODULES = {
    "train.py": """
        import jax
        from .utils import clip_positive
        from pkg import layers

        @jax.jit
        def step(params, x):
            y = layers.dense(params, x)
            return clip_positive(x * y)
    """,
    "utils.py": """
        def clip_positive(v):
            if v > 0:
                return v
            return 0.0
    """,
    "layers.py": """
        def dense(params, x):
            n = int(x)
            return params * n
    """,
    "broken.py": "def f(:\n",
    "buggy.py": """
        import jax

        @jax.jit
        def f(x):
            if x > 0:
                return x
            return -x
    """,
}


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Start a pool even for a handful of files; the list records the workers of every pool started."""
    monkeypatch.setattr(parallel, "MIN_FILES_PER_WORKER", 1)
    started: list[int] = []
    start = parallel.Checker._start

    def recording(self: parallel.Checker, workers: int):  # noqa: ANN202
        started.append(workers)
        return start(self, workers)

    monkeypatch.setattr(parallel.Checker, "_start", recording)
    return started


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_package(tmp_path, MODULES)


def _both(paths: list[Path], linter: Linter | None = None) -> tuple[CheckReport, CheckReport]:
    linter = linter or Linter(Configuration())
    return linter.check_paths(paths, jobs=1), linter.check_paths(paths, jobs=2)


def test_two_jobs_match_one_on_a_cross_module_project(project: Path, pooled: list[int]):
    single, double = _both([project / "pkg"])
    assert pooled == [2]
    assert double.diagnostics == single.diagnostics and double.errors == single.errors
    assert double.files_checked == single.files_checked == 6
    codes = {(Path(d.path).name, d.code) for d in double.diagnostics}
    assert {("utils.py", "JAX301"), ("layers.py", "JAX302"), ("broken.py", "JAX001"), ("buggy.py", "JAX301")} <= codes


def test_two_jobs_match_one_on_the_examples(tmp_path: Path, pooled: list[int]):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    single, double = _both([tmp_path / "examples"])
    assert pooled == [2]
    assert double.diagnostics == single.diagnostics and double.errors == single.errors
    assert len(single.diagnostics) > 5


def test_few_files_stay_in_process(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(parallel.Checker, "_start", lambda *_: pytest.fail("a pool was started"))
    assert Linter(Configuration()).check_paths([project / "pkg"], jobs=2).files_checked == 6


class _Crashing(Rule):
    """Kills the worker process on one file (imported by reference in the workers)."""

    code = "JAX998"
    name = "crashing-rule"
    summary = "test double"

    def visit_Module(self, node) -> None:  # noqa: ANN001
        if self.context.path.endswith("buggy.py"):
            os._exit(3)


def test_a_crashed_worker_loses_no_other_file(project: Path, pooled: list[int]):
    linter = Linter(Configuration())
    linter.rules = [*linter.rules, _Crashing]
    report = linter.check_paths([project / "pkg"], jobs=2)
    assert [(Path(e.path).name, e.message) for e in report.errors] == [("buggy.py", parallel.CRASH_MESSAGE)]
    names = {Path(d.path).name for d in report.diagnostics}
    assert {"utils.py", "layers.py", "broken.py"} <= names and "buggy.py" not in names
    assert report.exit_code == 2
