"""The engine never crashes and never loses a file: bad input gives a clear message, others go on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jaxcheck import check_paths, check_source
from jaxcheck.analyzer.rule import Rule
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.config import Configuration

BUGGY = "import jax\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"

# Inputs that make LibCST's native parser overflow the C stack (exit 139) when parsed naively.
PATHOLOGICAL = {
    "parens.py": "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "brackets.py": "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "calls.py": "x = " + "f(" * 3000 + ")" * 3000 + "\n",
}
EXHAUSTING = {  # CPython's parser runs out of memory (unary) or recursion depth (sum): no syntax verdict
    "unary.py": "x = " + "-" * 100_000 + "1\n",
    "sum.py": "x = " + "+".join(["1"] * 20_000) + "\n",
}


def test_pathological_inputs_give_jax001_or_a_file_error_and_the_run_goes_on(tmp_path: Path):
    for name, text in {**PATHOLOGICAL, **EXHAUSTING}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "and_chain.py").write_text("x = " + " and ".join(["a"] * 12_000) + "\n")
    (tmp_path / "buggy.py").write_text(BUGGY)
    result = subprocess.run(
        [sys.executable, "-m", "jaxcheck", "check", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2, result.stderr
    lines = result.stdout.splitlines()
    for name in PATHOLOGICAL:
        assert any(name in line and "JAX001" in line for line in lines), name
    for name in EXHAUSTING:
        assert f"{name}: error: cannot analyze line 1: file too large to check" in result.stderr, name
    assert any("buggy.py:5:8: JAX301" in line for line in lines)
    assert not any("and_chain.py" in line for line in lines)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"x = 1\n\x00\x01binary", "binary file"),
        (b"name = 'caf\xe9'\n", "not valid utf-8"),
        (b"# -*- coding: nonsense -*-\nx = 1\n", "unknown encoding"),
    ],
)
def test_undecodable_files_are_jax001_naming_the_problem(tmp_path: Path, data: bytes, expected: str):
    (tmp_path / "bad.py").write_bytes(data)
    (tmp_path / "buggy.py").write_text(BUGGY)
    report = check_paths([tmp_path])
    bad = [d for d in report.diagnostics if d.path.endswith("bad.py")]
    assert len(bad) == 1 and bad[0].code == "JAX001" and expected in bad[0].message.lower()
    assert any(d.path.endswith("buggy.py") and d.code == "JAX301" for d in report.diagnostics)


def test_empty_file_is_clean():
    report = check_source(b"")
    assert report.diagnostics == [] and report.errors == []


def test_bom_and_pep263_files_are_read_correctly():
    bom = b"\xef\xbb\xbf" + BUGGY.encode()
    assert [(d.code, d.range.start.line, d.range.start.column) for d in check_source(bom).diagnostics] == [
        ("JAX301", 5, 7)
    ]
    latin1 = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BUGGY.encode()
    assert [d.range.start.line for d in check_source(latin1).diagnostics] == [7]


def test_unreadable_path_is_an_error_and_others_are_checked(tmp_path: Path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    broken = tmp_path / "dangling.py"
    broken.symlink_to(tmp_path / "missing.py")
    report = check_paths([tmp_path])
    assert any("dangling.py" in e.path and "cannot read" in e.message for e in report.errors)
    assert any(d.code == "JAX301" for d in report.diagnostics)
    assert report.exit_code == 2


class _Exploding(Rule):
    code = "JAX999"
    name = "exploding-rule"
    summary = "test double"

    def visit_Call(self, node) -> None:  # noqa: ANN001
        raise RuntimeError("boom")


def test_a_failing_rule_is_reported_and_other_rules_still_run(tmp_path: Path):
    (tmp_path / "a.py").write_text(BUGGY + "print(1)\n")
    linter = Linter(Configuration())
    linter.rules = [*linter.rules, _Exploding]
    report = linter.check_paths([tmp_path])
    assert any("JAX999" in e.message and "boom" in e.message and e.path.endswith("a.py") for e in report.errors)
    assert any(d.code == "JAX301" for d in report.diagnostics)
    assert report.exit_code == 2


def test_duplicate_reports_are_merged():
    source = "import jax\n@jax.jit\ndef f(x):\n    while x > 0 and x < 9:\n        x = x - 1\n    return x\n"
    diagnostics = check_source(source).diagnostics
    assert len(diagnostics) == len(set((d.code, d.range) for d in diagnostics))


def test_an_editor_check_reuses_its_importer_scan_until_a_project_file_changes(tmp_path: Path, monkeypatch) -> None:
    """Checking one file again with an equal summary reuses the last scan for its importers; a change to
    another project file, or a new summary, scans again (and sees the change)."""
    import jaxcheck.analyzer.engine as engine

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    lib = tmp_path / "lib.py"
    lib.write_text("def helper(x):\n    return x\n")
    user = tmp_path / "user.py"
    user.write_text("import jax\nfrom lib import helper\nstep = jax.jit(helper)\n")
    scans: list[int] = []
    original = engine.importers
    monkeypatch.setattr(engine, "importers", lambda *args: scans.append(1) or original(*args))
    linter = Linter(Configuration())
    data = lib.read_bytes()
    assert linter.check_file_in_project(lib, data).diagnostics == []
    assert linter.check_file_in_project(lib, data + b"# a comment\n").diagnostics == []
    assert len(scans) == 1
    user.write_text("import jax\nfrom lib import helper\nstep = jax.jit(helper)\nother = 1\n")
    linter.check_file_in_project(lib, data)
    assert len(scans) == 2
    report = linter.check_file_in_project(lib, b"def helper(x):\n    print(x)\n    return x\n")
    assert len(scans) == 2 and [d.code for d in report.diagnostics] == ["JAX103"]  # the same summary
    linter.check_file_in_project(lib, data + b"def other(y):\n    return helper(y)\n")
    assert len(scans) == 3
