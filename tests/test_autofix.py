"""Applying fixes to files: until none applies, never unparsable, atomic, encoding-preserving."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from jaxcheck.analyzer.autofix import fix_files, write_atomically
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
    write_atomically(latin, "# -*- coding: latin-1 -*-\n# caf\u00e9\nx = 2\n")
    assert latin.read_bytes() == b"# -*- coding: latin-1 -*-\n# caf\xe9\nx = 2\n"
    assert stat.S_IMODE(latin.stat().st_mode) == 0o640
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfx = 1\n")
    write_atomically(bom, "x = 2\n")
    assert bom.read_bytes() == b"\xef\xbb\xbfx = 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bom.py", "latin.py"]  # no temp file left


def test_a_fix_that_breaks_the_syntax_leaves_the_file_unchanged(tmp_path: Path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    where = Range(Position(1, 0), Position(1, 1))
    broken = Diagnostic(str(path), where, "JAX201", "in-place-array-update", "test",
                        Fix((Edit(where, "x ="),), "safe", "break it"))
    (result,) = fix_files(Linter(Configuration()), [broken], unsafe=False)
    assert result.after == result.before == "x = 1\n" and "does not parse" in result.error
