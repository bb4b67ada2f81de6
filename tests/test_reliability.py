"""Hostile input, end to end (issue 12): each row of the README's Reliability table through the command
line in a fresh process, and through flake8 where it applies. Every project also holds `good.py`, whose
finding proves the other files are still checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import checkout_environment, cli

GOOD = "import jax\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"
GOOD_FINDING = "good.py:6:8: JAX301 "


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def check(project: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return cli("check", "--no-cache", "-j", "1", "--format", "concise", *args, cwd=project, timeout=timeout)


def flake8(project: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("flake8")
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "JAX", *(paths or ["."])], cwd=project,
                          capture_output=True, text=True, timeout=300, env=checkout_environment())


@pytest.mark.parametrize("codec", ["rot13", "hex", "base64", "zlib", "punycode", "undefined"])
def test_a_coding_declaration_python_refuses_is_jax001_in_the_file_and_ignored_in_siblings(project: Path, codec: str):
    (project / "bad.py").write_text(f"# coding: {codec}\nx = 1\n")
    result = check(project)
    assert result.returncode == 1, result.stderr
    assert "bad.py:1:1: JAX001 encoding problem: " in result.stdout and GOOD_FINDING in result.stdout
    alone = check(project, "good.py")  # bad.py is only a sibling read by the importer scan
    assert alone.returncode == 1 and "bad.py" not in alone.stdout + alone.stderr
    if codec in ("punycode", "undefined"):  # flake8 itself stops on the others (LookupError in its tokenize)
        assert "./bad.py:1:1: JAX001 " in flake8(project).stdout


def test_a_symlink_loop_is_a_one_line_error(project: Path):
    (project / "loop.py").symlink_to("loop.py")
    (project / "a").symlink_to("b")
    (project / "b").symlink_to("a")
    result = check(project)
    assert result.returncode == 2
    assert result.stderr == "loop.py: error: cannot read: Too many levels of symbolic links\n"
    assert GOOD_FINDING in result.stdout


def test_a_fifo_named_like_a_module_is_a_one_line_error_not_a_hang(project: Path):
    os.mkfifo(project / "x.py")
    result = check(project, timeout=60)
    assert result.returncode == 2
    assert result.stderr == "x.py: error: cannot read: not a regular file (a FIFO)\n"
    assert GOOD_FINDING in result.stdout


def test_gitignore_patterns_git_tolerates_never_crash(project: Path):
    (project / ".gitignore").write_text("[z-a].py\n[!]\n[]\n[unclosed\n\\\n")
    result = check(project)
    assert result.returncode == 1 and GOOD_FINDING in result.stdout, result.stderr


def test_a_gitignore_pattern_cannot_make_matching_exponential(project: Path):
    (project / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*c\n")
    (project / ("a" * 240 + ".py")).write_text("x = 1\n")
    started = time.monotonic()
    result = check(project, timeout=60)
    assert result.returncode == 1 and GOOD_FINDING in result.stdout
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("output", ["text", "concise", "json", "sarif", "junit", "github"])
def test_a_file_name_that_is_not_utf8_is_checked_and_reported(project: Path, output: str):
    name = os.fsdecode(b"caf\xff.py")
    (project / name).write_text(GOOD)
    result = cli("check", "-j", "1", "--format", output, ".", cwd=project, timeout=120,
                 env={**checkout_environment(), "PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    if output == "sarif":
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(result.stdout)["runs"][0]["results"]]
        assert sorted(uris) == ["caf%FF.py", "good.py"]
    elif output == "junit":  # XML cannot hold the byte: it is shown as U+FFFD
        assert "caf\ufffd.py" in result.stdout
    elif output == "json":
        assert sorted(d["filename"] for d in json.loads(result.stdout)) == [name, "good.py"]
    else:
        assert name in result.stdout
    again = cli("check", "-j", "1", ".", cwd=project, timeout=120)  # now from the cache
    assert again.returncode == 1 and name in again.stdout


@pytest.mark.parametrize("separator", ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_characters_python_does_not_break_lines_on_keep_noqa_on_its_line(project: Path, separator: str):
    source = (f"import jax\n# a comment with {separator} inside\n\n@jax.jit\ndef f(x, y):\n"
              "    if x > 0:  # noqa: JAX301\n        return x\n    if y > 0:\n        return y\n    return -x\n")
    (project / "good.py").write_text(source)
    result = check(project)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("good.py:8:8: JAX301 ") and "good.py:6:" not in result.stdout
    assert [line[:16] for line in flake8(project).stdout.splitlines()] == ["./good.py:8:8: J"]


def test_a_long_boolean_chain_is_one_finding(project: Path):
    (project / "chain.py").write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    y = " + " and ".join(["x"] * 2000)
                                      + "\n    if " + " or ".join(["x"] * 2000) + ":\n        return y\n    return x\n")
    result = check(project)
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("chain.py")]
    assert [line.split(" ")[0] for line in lines] == ["chain.py:6:9:", "chain.py:7:8:"]
    assert len(result.stdout) < 2_000


def test_a_latin1_or_cp1252_file_reads_the_same_through_flake8_and_the_cli(project: Path):
    (project / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport jax\n\n\n@jax.jit\ndef g(x):\n"
                                       b"    s = '\xe9\xe9\xe9'; y = x if x > 0 else 0\n    return y\n")
    (project / "euro.py").write_bytes(b"# coding: cp1252\nprice = '\x80 5'\n")
    cli_lines = sorted(check(project).stdout.splitlines()[:-1])
    flake8_lines = sorted(line.removeprefix("./") for line in flake8(project).stdout.splitlines())
    assert cli_lines == flake8_lines and any(line.startswith("latin.py:7:25: JAX301") for line in cli_lines)
    assert not any("euro.py" in line for line in cli_lines)


@pytest.mark.parametrize("source", [
    "if True:\n\tif True:\n\t    x = 1\n\ty = 2\n",
    "if True:\n    if True:\n    \tx = 1\n",
    "if True:\n \t x = 1\n \t y = 2\n",
    "if True:\n  if True:\n\t    x = 1\n  y = 2\n",  # LibCST wants "  " to prefix the inner indentation
    "x = (" + " ".join(['"a"'] * 5000) + ")\n",
    "x = (\n" + "\n".join(['    "a"  # one'] * 5000) + "\n)\n",
    "type Vector = list[float]\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n",
    "name = 'x'\ngreeting = f'{f'{name!r}'}' + f\"{'a' + \"b\"}\"\n",
])
def test_valid_code_is_never_jax001(project: Path, source: str):
    (project / "valid.py").write_text(source)
    result = check(project)
    assert result.returncode == 1 and result.stdout.splitlines()[:-1] == [line for line in result.stdout.splitlines()
                                                                          if line.startswith("good.py")], result.stdout
    assert "valid.py" not in flake8(project).stdout


def test_checking_never_imports_or_runs_the_code(project: Path, tmp_path_factory: pytest.TempPathFactory):
    marker = tmp_path_factory.mktemp("marker") / "ran"
    payload = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
    (project / "pkg").mkdir()
    for name in ("__init__.py", "evil.py", "conftest.py", "setup.py", "__main__.py"):
        (project / "pkg" / name).write_text(payload)
    (project / "good.py").write_text("import pkg.evil\nfrom pkg import evil\n" + GOOD)
    (project / "pyproject.toml").write_text("[tool.jaxcheck]\nextra-jit-decorators = ['pkg.evil.jit']\n")
    assert check(project).returncode == 1
    assert cli("check", "-j", "2", ".", cwd=project).returncode == 1
    flake8(project)
    assert not marker.exists()


def test_a_walk_never_follows_a_symlink_out_of_the_given_folder(project: Path, tmp_path_factory: pytest.TempPathFactory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.py").write_text(GOOD)
    (outside / "pkg").mkdir()
    (outside / "pkg" / "deep.py").write_text(GOOD)
    (project / "linked.py").symlink_to(outside / "secret.py")
    (project / "linked_folder").symlink_to(outside / "pkg")
    (project / "inner.py").symlink_to(project / "good.py")
    result = check(project)
    assert result.returncode == 1
    assert [line.split(" ")[0] for line in result.stdout.splitlines()[:-1]] == ["good.py:6:8:"]
    assert result.stderr == f"linked.py: note: skipped: a symlink to {outside / 'secret.py'}, outside .\n"


def test_output_grows_linearly_with_findings_on_one_long_line(project: Path):
    sizes = []
    for count in (200, 2000):
        (project / "wide.py").write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    return "
                                         + " + ".join(["int(x)"] * count) + "\n")
        result = cli("check", "--no-cache", "-j", "1", "wide.py", cwd=project)
        assert result.returncode == 1 and result.stdout.count("JAX302") == count
        sizes.append(len(result.stdout))
    assert sizes[1] < 11 * sizes[0]  # ten times the input: about ten times the output, not a hundred


def test_a_finding_under_mixed_tab_indentation_keeps_its_column(project: Path):
    (project / "tabs.py").write_text("import jax\n\nif True:\n  @jax.jit\n  def f(y):\n\t    if y:\n"
                                     "\t        return 1\n\t    return 0\n")
    result = check(project, "tabs.py")
    assert result.returncode == 1 and result.stdout.startswith("tabs.py:6:9: JAX301 "), result.stdout + result.stderr


def test_an_importer_in_a_declared_encoding_still_traces_the_checked_module(project: Path):
    (project / "utils.py").write_text("def positive(v):\n    if v > 0:\n        return v\n    return 0.0\n")
    (project / "train.py").write_bytes(b"# coding: cp1252\n# \xc1\nimport jax\nfrom utils import positive\n\n\n"
                                       b"@jax.jit\ndef step(x):\n    return positive(x)\n")
    result = check(project, "utils.py")
    assert result.returncode == 1 and result.stdout.startswith("utils.py:2:8: JAX301 "), result.stdout + result.stderr


def test_parsing_skips_only_the_parsers_own_validation():
    import libcst as cst

    from jaxcheck.analyzer.parsing import parse_source, run_with_deep_stack

    source = "import jax\n\n@jax.jit\ndef f(x, *, y=1):\n    return [x async for x in y] if x else {**y}\n"
    tree = run_with_deep_stack(lambda: parse_source(source))
    assert isinstance(tree, cst.Module) and tree.code == source
    assert tree.deep_equals(cst.parse_module(source))  # the same tree LibCST builds validating
    with pytest.raises(cst.CSTValidationError):  # nodes built after parsing are validated as ever
        cst.Name("not an identifier")


def test_text_the_host_parser_rejects_is_still_validated_by_libcst():
    from jaxcheck.analyzer.engine import check_source

    report = check_source("x = 1\nMv\U00013767íñ\n", "a.py")  # LibCST parses it; only its validation refuses it
    assert [d.code for d in report.diagnostics] == ["JAX001"]
