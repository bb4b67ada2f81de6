"""Every check, positive and near-miss negative, through the three switches: `checking(...)`,
`jaxcheck run` and `pytest --jaxcheck`."""

from __future__ import annotations

import re
import runpy
import textwrap
from pathlib import Path

import pytest

from jaxcheck.runtime import checking
from tests.runtime.conftest import run_jaxcheck, run_pytest
from tests.runtime.programs import NEGATIVE, POSITIVE, Program

ALL = POSITIVE + NEGATIVE


def _write(folder: Path, program: Program) -> Path:
    path = folder / f"{program.name}.py"
    path.write_text(program.text)
    return path


@pytest.mark.parametrize("program", ALL, ids=[p.name for p in ALL])
def test_context_manager(tmp_path: Path, program: Program):
    script = _write(tmp_path, program)
    with checking(mode="collect", nans=program.nans, index_checks=program.index_checks) as findings:
        runpy.run_path(str(script), run_name="__main__")
    found = {(d.code, d.range.start.line) for d in findings if Path(d.path).name == script.name}
    assert found == program.expected
    assert all(d.fix is not None and d.fix.title for d in findings)
    assert len(findings) == len(found), findings


def _summary_lines(output: str) -> set[tuple[str, str, int]]:
    """`(code, file name, line)` from the grouped summary (`CODE name (n) [url]` then indented lines)."""
    found, code = set(), None
    for line in output.splitlines():
        if header := re.match(r"^(JAX\d{3}) [a-z-]+ \(\d+\) \[", line):
            code = header.group(1)
        elif code and (entry := re.match(r"^  (?:.*/)?([\w.]+\.py):(\d+): ", line)):
            found.add((code, entry.group(1), int(entry.group(2))))
    return found


def _expected(programs: list[Program], offset: int = 0) -> set[tuple[str, str, int]]:
    return {(code, f"{p.name}.py", line + offset) for p in programs for code, line in p.expected}


@pytest.mark.parametrize(("nans", "index_checks"), [(False, False), (True, False), (False, True)],
                         ids=["defaults", "nans", "index_checks"])
def test_jaxcheck_run(tmp_path: Path, nans: bool, index_checks: bool):
    programs = [p for p in ALL if p.nans == nans and p.index_checks == index_checks]
    runner = ["import runpy, sys", "for path in sys.argv[1:]:", "    runpy.run_path(path, run_name='__main__')"]
    (tmp_path / "main.py").write_text("\n".join(runner) + "\n")
    paths = [_write(tmp_path, p).name for p in programs]
    if nans:
        (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.runtime]\nnans = true\n")
    result = run_jaxcheck(["run", *(["--index-checks"] if index_checks else []), "main.py", *paths], tmp_path)
    assert result.returncode == 0, result.stderr
    assert _summary_lines(result.stderr) == _expected([p for p in programs if p in POSITIVE])
    assert "RuntimeCheckWarning" in result.stderr  # mode warn: each finding also warns at its line


def test_pytest_plugin(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.runtime]\nnans = true\nindex-checks = true\n")
    for program in ALL:
        body = textwrap.indent(program.text, "    ")
        (tmp_path / f"test_{program.name}.py").write_text(f"def test_program():\n{body}")
    result = run_pytest(["--jaxcheck", "-q", "-p", "no:cacheprovider"],
                        tmp_path)
    assert f"{len(ALL)} passed" in result.stdout, result.stdout + result.stderr
    found = {(code, name.removeprefix("test_"), line) for code, name, line in _summary_lines(result.stdout)}
    assert found == _expected(POSITIVE, offset=1)


def test_pytest_plugin_is_off_without_the_flag(tmp_path: Path):
    program = POSITIVE[0]
    (tmp_path / "test_one.py").write_text("def test_program():\n" + textwrap.indent(program.text, "    "))
    result = run_pytest(["-q", "-p", "no:cacheprovider"], tmp_path)
    assert "1 passed" in result.stdout and "jaxcheck" not in result.stdout


def test_pytest_plugin_raise_mode_fails_the_test_that_caused_the_finding(tmp_path: Path):
    program = next(p for p in POSITIVE if p.name == "print_while_tracing")
    (tmp_path / "test_one.py").write_text("def test_program():\n" + textwrap.indent(program.text, "    "))
    (tmp_path / "test_two.py").write_text("def test_clean():\n    assert True\n")
    result = run_pytest(["--jaxcheck", "--jaxcheck-mode", "raise", "-q", "-p", "no:cacheprovider"], tmp_path)
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "RuntimeCheckError" in result.stdout and "JAX103" in result.stdout


def test_index_checks_are_off_by_default(tmp_path: Path):
    program = next(p for p in POSITIVE if p.name == "out_of_bounds_index")
    script = _write(tmp_path, program)
    with checking(mode="collect") as findings:
        runpy.run_path(str(script), run_name="__main__")
    assert not [d for d in findings if d.code == "JAX203"]
