"""The command line: exit codes, selection, formats, configuration errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
import subprocess
import sys
from pathlib import Path

import pytest

from jaxcheck import __version__
from jaxcheck.analyzer.registry import all_rules
from jaxcheck.cli import main

BUGGY = "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return int(x)\n    return jnp.nonzero(x)\n"


@pytest.fixture
def buggy(tmp_path: Path) -> Path:
    (tmp_path / "buggy.py").write_text(BUGGY)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_exit_1_with_one_based_columns(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy))
    assert code == 1
    assert f"{buggy / 'buggy.py'}:6:8: JAX301 " in out
    assert f"{buggy / 'buggy.py'}:7:16: JAX302 " in out
    assert f"{buggy / 'buggy.py'}:8:12: JAX303 " in out


def test_clean_exit_0(capsys, tmp_path: Path):
    (tmp_path / "ok.py").write_text("import jax\n\n@jax.jit\ndef f(x):\n    return x * 2\n")
    assert run(capsys, "check", str(tmp_path)) == (0, "", "")


def test_select_and_ignore_by_code_and_prefix(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy), "--select", "JAX302")
    assert "JAX302" in out and "JAX301" not in out and "JAX303" not in out
    _, out, _ = run(capsys, "check", str(buggy), "--ignore", "JAX30")
    assert "JAX30" not in out
    _, out, _ = run(capsys, "check", str(buggy), "--select", "JAX3", "--ignore", "JAX301,JAX303")
    assert "JAX302" in out and "JAX301" not in out


def test_unknown_code_is_a_usage_error(capsys, buggy: Path):
    code, out, err = run(capsys, "check", str(buggy), "--select", "JAX777")
    assert code == 2 and out == "" and "unknown rule code or prefix 'JAX777'" in err


def test_json_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--format", "json")
    items = json.loads(out)
    assert code == 1
    first = items[0]
    assert set(first) >= {"code", "name", "message", "path", "line", "column", "end_line", "end_column", "fix", "url"}
    assert (first["code"], first["line"], first["column"], first["fix"]) == ("JAX301", 6, 8, None)
    assert first["url"].endswith("python-branch-on-tracer.md")


def test_text_format_shows_the_source_line_underlined(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy))
    assert "6 |     if x > 0:\n  |        ^^^^^\n" in out and "\x1b[" not in out
    assert out.endswith("Found 3 findings.\n")


def test_concise_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--output-format", "concise")
    assert code == 1 and len(out.splitlines()) == 4 and " |" not in out


def test_github_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--format", "github")
    assert code == 1 and len(out.splitlines()) == 3
    expected = f"::error file={buggy / 'buggy.py'},line=6,col=8,endLine=6,endColumn=13,"
    assert out.startswith(expected + "title=JAX301 (python-branch-on-tracer)::Python `if` needs")


def test_sarif_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--format", "sarif")
    log = json.loads(out)
    assert code == 1 and log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["JAX301", "JAX302", "JAX303"]
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startColumn"] == 8


def test_junit_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--format", "junit")
    root = ET.fromstring(out)
    assert code == 1 and [len(suite) for suite in root] == [3]


def test_rule_prints_markdown_docs(capsys):
    code, out, _ = run(capsys, "rule", "JAX301")
    assert code == 0 and out.startswith("# python-branch-on-tracer (JAX301)\n") and "## Why is this bad?" in out
    assert run(capsys, "rule", "python-branch-on-tracer")[1] == out


def test_rule_all_prints_every_rule(capsys):
    code, out, _ = run(capsys, "rule", "--all")
    assert code == 0 and [line for line in out.splitlines() if line.startswith("# ")] == [
        f"# {rule.name} ({rule.code})" for rule in all_rules()]


def test_unknown_rule_is_exit_2(capsys):
    code, out, err = run(capsys, "rule", "JAX777")
    assert (code, out, err) == (2, "", "jaxcheck: error: unknown rule 'JAX777'\n")
    assert run(capsys, "rule")[0] == 2


def test_config_schema(capsys):
    code, out, _ = run(capsys, "config", "--schema")
    schema = json.loads(out)
    assert code == 0 and schema["additionalProperties"] is False
    assert {"select", "ignore", "per-file-ignores", "extend-exclude", "extra-jit-decorators"} <= set(schema["properties"])
    assert run(capsys, "config")[0] == 2


def test_version_and_no_cache(capsys, buggy: Path):
    assert run(capsys, "--version") == (0, f"jaxcheck {__version__}\n", "")
    assert run(capsys, "check", str(buggy), "--no-cache")[0] == 1


def test_missing_path_is_exit_2(capsys, tmp_path: Path):
    code, _, err = run(capsys, "check", str(tmp_path / "nope.py"))
    assert code == 2 and "no such file" in err


def test_bad_config_is_exit_2_with_one_line_naming_file_and_key(capsys, buggy: Path):
    (buggy / "pyproject.toml").write_text("[tool.jaxcheck]\nselectt = ['JAX3']\n")
    code, out, err = run(capsys, "check", str(buggy))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "pyproject.toml" in err and "selectt" in err and "unknown key" in err


def test_config_file_selects_rules(capsys, buggy: Path):
    (buggy / "pyproject.toml").write_text("[tool.jaxcheck]\nignore = ['JAX301']\n")
    _, out, _ = run(capsys, "check", str(buggy))
    assert "JAX302" in out and "JAX301" not in out


def test_explicit_config_file(capsys, buggy: Path, tmp_path: Path):
    config = tmp_path / "jaxcheck.toml"
    config.write_text("select = ['JAX303']\n")
    _, out, _ = run(capsys, "check", str(buggy), "--config", str(config))
    assert "JAX303" in out and "JAX301" not in out


def test_exit_zero(capsys, buggy: Path):
    assert run(capsys, "check", str(buggy), "--exit-zero")[0] == 0


def test_console_script_and_module_entry_point(buggy: Path):
    result = subprocess.run([sys.executable, "-m", "jaxcheck", "check", str(buggy)], capture_output=True, text=True)
    assert result.returncode == 1 and "JAX301" in result.stdout


def test_usage_error_is_exit_2(capsys):
    code, _, err = run(capsys, "check", "--format", "xml")
    assert code == 2 and "invalid choice" in err


MUTATION = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\n"


def test_fix_writes_safe_fixes_and_reports_what_is_left(capsys, tmp_path: Path):
    target = tmp_path / "a.py"
    target.write_text(MUTATION + "import jax\n\n@jax.jit\ndef f(v):\n    print(v)\n    return v\n")
    code, out, err = run(capsys, "check", str(target), "--fix")
    assert "x = x.at[0].set(1.0)\n" in target.read_text()
    assert "print(v)" in target.read_text()  # the JAX103 fix is unsafe
    assert code == 1 and "JAX201" not in out and "JAX103" in out and "Fixed 1 finding." in err
    code, out, _ = run(capsys, "check", str(target), "--fix", "--unsafe-fixes")
    assert code == 0 and out == "" and "jax.debug.print('{}', v)" in target.read_text()


def test_diff_prints_and_writes_nothing(capsys, tmp_path: Path):
    target = tmp_path / "a.py"
    target.write_text(MUTATION)
    code, out, _ = run(capsys, "check", str(target), "--diff")
    assert code == 1 and "-x[0] = 1.0\n+x = x.at[0].set(1.0)\n" in out
    assert target.read_text() == MUTATION
    target.write_text("x = 1\n")
    assert run(capsys, "check", str(target), "--diff") == (0, "", "")


def test_force_exclude_skips_excluded_named_files(capsys, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-exclude = ['gen']\n")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "a.py").write_text(BUGGY)
    assert run(capsys, "check", str(tmp_path / "gen" / "a.py"))[0] == 1
    assert run(capsys, "check", str(tmp_path / "gen" / "a.py"), "--force-exclude") == (0, "", "")
