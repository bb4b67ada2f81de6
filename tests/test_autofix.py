"""Applying fixes to files: until none applies, never unparsable, atomic, encoding-preserving."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import checkout_environment, cli

from jaxcheck.analyzer.autofix import FileFix, fix_files, fix_source, write_fixed
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, Fix, Position, Range
from jaxcheck.analyzer.engine import Linter

MUTATION = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\nx[1] += 2.0\n"
FIXED = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\nx = x.at[1].add(2.0)\n"


def _fix(path: Path, unsafe: bool = False):
    linter = Linter(Configuration())
    report = linter.check_paths([path])
    return fix_files(linter, report.diagnostics, unsafe)


def test_safe_fixes_are_applied_and_the_result_is_clean(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text(MUTATION)
    (result,) = _fix(path)
    assert result.after == FIXED and result.error is None and result.applied == 2
    assert path.read_text() == MUTATION  # fix_files itself writes nothing
    diff = result.diff()
    assert diff.startswith(f"--- {path.as_posix()}\n+++ {path.as_posix()}\n")
    assert "\n-x[0] = 1.0\n" in diff and "\n+x = x.at[0].set(1.0)\n" in diff


def test_unsafe_fixes_need_opting_in(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text("import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n")
    assert _fix(path) == []
    (result,) = _fix(path, unsafe=True)
    assert "jax.debug.print('{}', x)" in result.after


def test_atomic_write_keeps_mode_encoding_and_bom(tmp_path: Path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\nx = 1\n")
    os.chmod(latin, 0o640)
    write_fixed(FileFix(latin, "# -*- coding: latin-1 -*-\n# caf\u00e9\nx = 1\n",
                        "# -*- coding: latin-1 -*-\n# caf\u00e9\nx = 2\n", 1))
    assert latin.read_bytes() == b"# -*- coding: latin-1 -*-\n# caf\xe9\nx = 2\n"
    assert stat.S_IMODE(latin.stat().st_mode) == 0o640
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfx = 1\n")
    write_fixed(FileFix(bom, "x = 1\n", "x = 2\n", 1))
    assert bom.read_bytes() == b"\xef\xbb\xbfx = 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bom.py", "latin.py"]  # no temp file left


def test_a_fix_that_breaks_the_syntax_leaves_the_file_unchanged(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    where = Range(Position(1, 0), Position(1, 1))
    broken = Diagnostic(str(path), where, "JAX201", "in-place-array-update", "test",
                        Fix((Edit(where, "x ="),), "safe", "break it"))
    result = fix_source(path, "x = 1\n", [broken], False, lambda text: [])
    assert result.after == result.before == "x = 1\n" and "does not parse" in result.error


def test_fix_writes_through_a_symlink_and_keeps_hard_links(tmp_path: Path):
    target = tmp_path / "real.py"
    target.write_text(MUTATION)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    hard = tmp_path / "hard.py"
    hard.write_text(MUTATION)
    twin = tmp_path / "twin.txt"
    os.link(hard, twin)
    result = cli("check", "--fix", "--no-cache", "-j", "1", "link.py", "hard.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert link.is_symlink() and target.read_text() == FIXED
    assert hard.read_text() == twin.read_text() == FIXED and hard.stat().st_ino == twin.stat().st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.py", "link.py", "real.py", "twin.txt"]


def test_fix_keeps_crlf_line_endings_and_a_second_fix_changes_nothing(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_bytes(MUTATION.replace("\n", "\r\n").encode())
    first = cli("check", "--fix", "--no-cache", "-j", "1", "a.py", cwd=tmp_path)
    assert first.returncode == 0 and "Found 2 errors (2 fixed, 0 remaining)." in first.stdout
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    second = cli("check", "--fix", "--no-cache", "-j", "1", "a.py", cwd=tmp_path)
    assert second.returncode == 0 and second.stdout == "All checks passed!\n"
    assert path.read_bytes() == FIXED.replace("\n", "\r\n").encode()


def test_a_file_edited_while_it_was_fixed_is_not_overwritten(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text(MUTATION)
    (result,) = _fix(path)
    path.write_text(MUTATION + "y = 1\n")
    with pytest.raises(OSError, match="changed while it was being fixed"):
        write_fixed(result)
    assert path.read_text() == MUTATION + "y = 1\n"


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_during_a_write_leaves_the_new_file_and_no_temporary(tmp_path: Path, signal_name: str):
    path = tmp_path / "a.py"
    path.write_text("old\n")
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from jaxcheck.analyzer import files\n"
        "real_fsync = os.fsync\n"
        f"def fsync(fd):\n    os.kill(os.getpid(), signal.{signal_name})\n    real_fsync(fd)\n"
        "files.os.fsync = fsync\n"
        "files.replace_file(Path(sys.argv[1]), b'new\\n')\n"
        "print('not reached')\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                            env=checkout_environment(), timeout=60)
    assert result.returncode != 0 and "not reached" not in result.stdout
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_a_fix_that_would_bring_new_findings_is_not_applied(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text("import jax\nimport jax.numpy as jnp\n\nx = jnp.zeros(3)\n\n\n"
                    "@jax.jit\ndef f(y):\n    return y + x\n\n\nf(1.0)\nx.at[0].set(1.0)\nf(2.0)\n")
    (result,) = _fix(path)  # x = x.at[0].set(1.0) between two calls of f: a stale global read under jit (JAX101)
    assert result.after == result.before and result.error == "fixing would add new findings (JAX101); file left unchanged"


@pytest.mark.parametrize("unsafe", [False, True])
def test_every_fixable_rule_example_fixes_to_parsing_code_without_new_findings(tmp_path: Path, unsafe: bool):
    from jaxcheck.analyzer.registry import all_rules

    cases = [case.code for rule in all_rules() for case in rule.INVALID if isinstance(case.code, str)]
    fixed = 0
    for index, code in enumerate(cases):
        path = tmp_path / f"case{index}.py"
        path.write_text(code)
        for result in _fix(path, unsafe):
            assert result.error is None, (code, result.error)
            write_fixed(result)
            fixed += 1
            assert _fix(path, unsafe) == []  # a second --fix changes nothing
    assert fixed >= 15
