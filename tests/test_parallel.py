"""Worker processes (`-j`) give exactly the in-process results, and a crashing worker loses no file."""

from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck.analyzer import parallel
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.rule import Rule
from jaxcheck.analyzer.semantics.solver import solve

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
    """Start workers even for a handful of files; the list has a 1 for every worker started."""
    monkeypatch.setattr(parallel, "MIN_FILES_PER_WORKER", 1)
    started: list[int] = []
    start = parallel.Checker._start

    def recording(self: parallel.Checker, keeps: bool = True):  # noqa: ANN202
        started.append(1)
        return start(self, keeps)

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
    assert pooled == [1, 1]
    assert double.diagnostics == single.diagnostics and double.errors == single.errors
    assert double.files_checked == single.files_checked == 6
    codes = {(Path(d.path).name, d.code) for d in double.diagnostics}
    assert {("utils.py", "JAX301"), ("layers.py", "JAX302"), ("broken.py", "JAX001"), ("buggy.py", "JAX301")} <= codes


def test_two_jobs_match_one_on_the_examples(tmp_path: Path, pooled: list[int]):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    single, double = _both([tmp_path / "examples"])
    assert pooled == [1, 1]
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


def _refuse_to_load() -> Linter:
    raise RuntimeError("this process cannot load the linter")


class _Unloadable(Linter):
    """A linter a worker process cannot unpickle: it dies while starting, as every spawned worker does
    when the script that runs jaxcheck has no `if __name__ == "__main__":` guard."""

    def __reduce__(self):  # noqa: ANN204
        return _refuse_to_load, ()


def test_workers_that_cannot_start_leave_the_run_to_this_process(project: Path, pooled: list[int]):
    single = Linter(Configuration()).check_paths([project / "pkg"], jobs=1)
    double = _Unloadable(Configuration()).check_paths([project / "pkg"], jobs=2)
    assert double.diagnostics == single.diagnostics and double.errors == single.errors
    assert pooled == [1, 1, 1]  # the two workers, then one probe: not one worker per file
    assert parallel.NO_WORKERS_NOTE in double.notes and parallel.NO_WORKERS_NOTE not in single.notes


def test_an_interactive_main_that_cannot_be_spawned_leaves_the_run_to_this_process(
        project: Path, pooled: list[int], monkeypatch: pytest.MonkeyPatch):
    single = Linter(Configuration()).check_paths([project / "pkg"], jobs=1)
    bare = types.ModuleType("__main__")
    del bare.__spec__  # as IPython's user module after `reset`: spawning a worker raises AttributeError
    monkeypatch.setitem(sys.modules, "__main__", bare)
    double = Linter(Configuration()).check_paths([project / "pkg"], jobs=2)
    assert double.diagnostics == single.diagnostics and double.errors == single.errors
    assert pooled == [1, 1, 1]  # the two workers, then one probe
    assert parallel.NO_WORKERS_NOTE in double.notes


class _Logging(Linter):
    """Appends `analyze <file>` and `lint <file>` to the file `log` (works in worker processes too)."""

    log: Path

    def analyze(self, display_path, data, module):  # noqa: ANN001, ANN201
        with self.log.open("a") as stream:
            stream.write(f"analyze {Path(display_path).name}\n")
        return super().analyze(display_path, data, module)

    def lint(self, analysis, solution):  # noqa: ANN001, ANN201
        with self.log.open("a") as stream:
            stream.write(f"lint {Path(analysis.display_path).name}\n")
        return super().lint(analysis, solution)


def _logged(linter: _Logging, paths: list[Path], jobs: int) -> tuple[CheckReport, list[str]]:
    linter.log.write_text("")
    report = linter.check_paths(paths, jobs=jobs)
    return report, linter.log.read_text().splitlines()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_second_check_lints_the_kept_analysis_without_parsing_again(project: Path, tmp_path: Path,
                                                                         pooled: list[int], jobs: int):
    linter = _Logging(Configuration())
    linter.log = tmp_path / "log.txt"
    report, log = _logged(linter, [project / "pkg"], jobs)
    analysed = [line for line in log if line.startswith("analyze")]
    assert sorted(analysed) == sorted(set(analysed)) and len(analysed) == 6  # each file parsed once
    assert log.count("lint utils.py") == 2  # linted alone, then with the project solve (`step` jits it)
    assert pooled == ([1, 1] if jobs == 2 else [])
    assert report.diagnostics == Linter(Configuration()).check_paths([project / "pkg"]).diagnostics


def test_a_worker_keeps_analyses_up_to_its_budget(project: Path, tmp_path: Path):
    linter = _Logging(Configuration())
    linter.log = tmp_path / "log.txt"
    linter.log.write_text("")
    small, large = (parallel.FileTask(str(project / "pkg" / name), (project / "pkg" / name).read_bytes(),
                                      ModuleName(f"pkg.{name[:-3]}", "pkg")) for name in ("utils.py", "train.py"))
    worker = parallel.FileWorker(linter, None, isolated=False, budget=len(small.data))
    for task in (small, large):
        worker.check(task, None)
    assert worker.keeps(small) and not worker.keeps(large)
    solution = solve([])
    worker.check(small, solution)
    worker.check(large, solution)
    assert linter.log.read_text().splitlines().count("analyze train.py") == 2
    assert linter.log.read_text().splitlines().count("analyze utils.py") == 1
    assert not worker.keeps(small)  # a second check is the last


def test_a_changed_file_is_parsed_again(project: Path, tmp_path: Path):
    linter = _Logging(Configuration())
    linter.log = tmp_path / "log.txt"
    linter.log.write_text("")
    worker = parallel.FileWorker(linter, None, isolated=False)
    path = project / "pkg" / "utils.py"
    task = parallel.FileTask(str(path), path.read_bytes(), ModuleName("pkg.utils", "pkg"))
    worker.check(task, None)
    edited = parallel.FileTask(task.display_path, task.data + b"\nx = 1\n", task.module)
    outcome = worker.check(edited, solve([]))
    assert linter.log.read_text().splitlines().count("analyze utils.py") == 2
    assert outcome.summary is not None and outcome.summary.path == task.display_path


class _CrashingWhenSolved(Rule):
    """Kills the worker process on `utils.py` only when the project solve says its test is traced (so
    on the second check, where the first kept the analysis)."""

    code = "JAX997"
    name = "crashing-when-solved-rule"
    summary = "test double"

    def visit_If(self, node) -> None:  # noqa: ANN001
        if self.context.path.endswith("utils.py") and self.model.is_traced(node.test):
            os._exit(3)


def test_a_worker_crashing_on_a_second_check_loses_no_other_file(project: Path, pooled: list[int]):
    linter = Linter(Configuration())
    linter.rules = [*linter.rules, _CrashingWhenSolved]
    report = linter.check_paths([project / "pkg"], jobs=2)
    assert [(Path(e.path).name, e.message) for e in report.errors] == [("utils.py", parallel.CRASH_MESSAGE)]
    expected = Linter(Configuration()).check_paths([project / "pkg"]).diagnostics
    assert report.diagnostics == [d for d in expected if not d.path.endswith("utils.py")]


def test_a_worker_that_died_while_idle_is_replaced_by_the_others(project: Path, pooled: list[int]):
    """A worker killed between the two checks (the OOM killer, say) fails the next send to it: its
    files go to the others, parsed again, with the same outcomes."""
    linter = Linter(Configuration())
    paths = sorted((project / "pkg").glob("*.py"))
    tasks = [parallel.FileTask(str(path), path.read_bytes(), ModuleName(f"pkg.{path.stem}", "pkg")) for path in paths]
    with parallel.Checker(linter, jobs=2) as checker:
        first = checker.check(tasks, None)
        solution = solve([outcome.summary for outcome in first if outcome.summary is not None])
        victim = checker._workers[0]
        for process in list(victim._processes.values()):
            process.kill()
            process.join()
        again = checker.check(tasks, solution)
    expected = [linter.check_file(task.display_path, task.data, task.module, solution) for task in tasks]
    assert [(o.diagnostics, o.errors) for o in again] == [(o.diagnostics, o.errors) for o in expected]
