"""The model's cost grows linearly with the code: interpreter steps (deterministic, see
`jaxcheck.analyzer.semantics.budget`) on each generated family of `scaling_programs.py` at n, 2n and
4n. Timing and memory of the same families are `bench/bench_scaling.py`'s business."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaling_programs import FAMILIES, Project, deep_loops

from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.semantics import budget, solver
from jaxcheck.analyzer.semantics.budget import STEPS

SMALL_N = {"helper_chain_conditional": 12, "threaded_state_guarded": 16, "nested_branches": 8, "long_jitted": 16,
           "key_split_loops": 12, "nested_loops": 2, "module_chain": 10, "wide_modules": 10, "many_small_files": 8,
           "big_literals": 200}
"""Sizes at which every family already shows its growth, small enough for the suite."""
MAX_PER_DOUBLING = 2.3


def checked_steps(project: Project, folder: Path) -> tuple[int, int]:
    """The steps a whole-project check of `project` takes, and how many findings it gives (none of them
    a syntax error: every generated program is valid Python)."""
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.jaxcheck]\n", encoding="utf-8")
    for relative, text in project.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    before = STEPS.total
    report = Linter(Configuration()).check_paths([folder], jobs=1)
    assert not report.errors
    assert not [d for d in report.diagnostics if d.code == "JAX001"]
    return STEPS.total - before, len(report.diagnostics)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_steps_grow_at_most_linearly(family: str, tmp_path: Path):
    n = SMALL_N[family]
    runs = [checked_steps(FAMILIES[family](size), tmp_path / str(size)) for size in (n, 2 * n, 4 * n)]
    steps = [count for count, _ in runs]
    assert all(found for _, found in runs), f"{family}: the bug at the far end was not found: {runs}"
    assert steps[1] / steps[0] <= MAX_PER_DOUBLING and steps[2] / steps[1] <= MAX_PER_DOUBLING, (family, steps)


def test_loop_nesting_costs_steps_linear_in_its_depth(tmp_path: Path):
    """Loops nested deeper than `FIXPOINT_DEPTH` run once: 16 levels cost about three times 8 levels
    (the 12 and 4 levels past the bound), where a fixpoint at every level would cost 2^8 times."""
    eight, found_eight = checked_steps({"loops.py": deep_loops(8)}, tmp_path / "eight")
    sixteen, found_sixteen = checked_steps({"loops.py": deep_loops(16)}, tmp_path / "sixteen")
    assert found_eight and found_sixteen
    assert sixteen / eight <= 3.5, (eight, sixteen)


def test_every_family_has_a_small_size():
    assert set(SMALL_N) == set(FAMILIES)


def test_a_function_over_its_budget_is_cut_and_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A function whose interpretation spends its budget has unknown facts: no finding in it, and the
    run names it; the other functions of the file are checked as usual."""
    monkeypatch.setattr(budget, "FUNCTION_STEPS", 300)
    long_body = "\n".join(f"    x = jnp.sin(x) + {i}" for i in range(200))
    source = (f"import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef big(x):\n{long_body}\n    if x > 0:\n"
              "        return x\n    return -x\n\n@jax.jit\ndef small(x):\n    if x > 0:\n        return x\n"
              "    return -x\n")
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\n", encoding="utf-8")
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    report = Linter(Configuration()).check_paths([tmp_path], jobs=1)
    lines = sorted(d.range.start.line for d in report.diagnostics)
    assert lines == [source.splitlines().index("def small(x):") + 2]
    assert any("`big`" in note and "work budget" in note for note in report.notes), report.notes


def test_a_solve_that_does_not_settle_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The project solve's rounds are bounded; a run that reaches the bound says so."""
    project = {"pkg/__init__.py": "", "pkg/helpers.py": "def clip(x):\n    if x > 0:\n        return x\n    return -x\n",
               "pkg/main.py": "import jax\nfrom pkg import helpers\n\n@jax.jit\ndef step(x):\n    return helpers.clip(x)\n"}
    for rounds, expected in ((solver.MAX_ROUNDS, False), (1, True)):
        monkeypatch.setattr(solver, "MAX_ROUNDS", rounds)
        folder = tmp_path / str(rounds)
        checked_steps(project, folder)
        report = Linter(Configuration()).check_paths([folder], jobs=1)
        assert any("stopped after" in note for note in report.notes) is expected, report.notes
