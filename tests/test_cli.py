"""The command line: exit codes, selection, formats, configuration errors."""

from __future__ import annotations

import io
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
    assert run(capsys, "check", str(tmp_path)) == (0, "All checks passed!\n", "")
    assert run(capsys, "check", str(tmp_path), "-q") == (0, "", "")


def test_a_file_that_cannot_be_checked_exits_2_without_all_checks_passed(capsys, tmp_path: Path):
    (tmp_path / "ok.py").write_text("import jax\n")
    (tmp_path / "broken.ipynb").write_text("{not json")
    code, out, err = run(capsys, "check", "--no-cache", str(tmp_path))
    assert (code, out) == (2, "No findings, but 1 file could not be checked.\n")
    assert f"{tmp_path / 'broken.ipynb'}: error: not a notebook: invalid JSON" in err


def test_select_and_ignore_by_code_and_prefix(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy), "--select", "JAX302")
    assert "JAX302" in out and "JAX301" not in out and "JAX303" not in out
    _, out, _ = run(capsys, "check", str(buggy), "--ignore", "JAX30")
    assert "JAX30" not in out
    _, out, _ = run(capsys, "check", str(buggy), "--select", "JAX3", "--ignore", "JAX301,JAX303")
    assert "JAX302" in out and "JAX301" not in out


def test_unknown_code_is_a_usage_error(capsys, buggy: Path):
    code, out, err = run(capsys, "check", str(buggy), "--select", "JAX777")
    assert code == 2 and out == "" and "unknown rule code, prefix or name 'JAX777'" in err


def test_json_format(capsys, buggy: Path):
    code, out, _ = run(capsys, "check", str(buggy), "--format", "json")
    items = json.loads(out)
    assert code == 1
    first = items[0]
    ruff_keys = {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"}
    assert set(first) - {"related"} == ruff_keys  # plus the notes that explain the finding, when it has any
    assert {note["filename"] for note in first["related"]} == {str(buggy / "buggy.py")}
    assert (first["code"], first["location"], first["fix"], first["cell"]) == ("JAX301", {"row": 6, "column": 8}, None, None)
    assert first["filename"] == str(buggy / "buggy.py") and first["noqa_row"] == 6
    assert first["url"].endswith("python-branch-on-tracer.md")


def test_text_format_shows_the_source_line_underlined(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy))
    assert "6 |     if x > 0:\n  |        ^^^^^\n" in out and "\x1b[" not in out
    assert out.endswith("Found 3 errors.\n")


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
    code, out, _ = run(capsys, "config")
    assert code == 0 and out.startswith("select ") and "runtime.mode " in out and "extend-select " in out
    code, out, _ = run(capsys, "config", "runtime.mode")
    assert code == 0 and out.startswith("runtime.mode\n") and 'Default value: "warn"' in out
    code, _, err = run(capsys, "config", "selct")
    assert code == 2 and "did you mean 'select'?" in err


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
    assert code == 1 and "JAX201" not in out and "JAX103" in out
    assert out.endswith("Found 2 errors (1 fixed, 1 remaining).\n"
                        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n")
    code, out, _ = run(capsys, "check", str(target), "--fix", "--unsafe-fixes")
    assert (code, out) == (0, "Found 1 error (1 fixed, 0 remaining).\n")
    assert "jax.debug.print('{}', v)" in target.read_text()


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
    assert run(capsys, "check", str(tmp_path / "gen" / "a.py"), "--force-exclude") == (
        0, "All checks passed!\n", "warning: No Python files found under the given path(s)\n")


def test_force_exclude_applies_to_the_stdin_filename(capsys, monkeypatch, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-exclude = ['gen']\n")
    excluded = str(tmp_path / "gen" / "a.py")
    _stdin(monkeypatch, BUGGY)
    assert run(capsys, "check", "-", "--stdin-filename", excluded)[0] == 1
    _stdin(monkeypatch, BUGGY)
    assert run(capsys, "check", "-", "--stdin-filename", excluded, "--force-exclude") == (0, "All checks passed!\n", "")
    _stdin(monkeypatch, MUTATION)
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", excluded, "--force-exclude", "--fix")
    assert (code, out) == (0, MUTATION)


# ------------------------------------------------------------------ issue 13: ruff habits
def test_bare_jaxcheck_prints_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == "" and err.startswith("usage: jaxcheck") and "check" in err


def test_no_python_files_warns_and_passes(capsys, tmp_path: Path):
    (tmp_path / "notes.txt").write_text("hi\n")
    assert run(capsys, "check", str(tmp_path), "--no-cache") == (
        0, "All checks passed!\n", "warning: No Python files found under the given path(s)\n")


def test_fixable_marker_and_ruff_footer(capsys, tmp_path: Path):
    (tmp_path / "a.py").write_text(MUTATION)
    code, out, _ = run(capsys, "check", str(tmp_path / "a.py"), "--format", "concise")
    assert code == 1 and f"{tmp_path / 'a.py'}:4:1: JAX201 [*] " in out
    assert out.endswith("Found 1 error.\n[*] 1 fixable with the `--fix` option.\n")


def test_repeated_select_is_merged_and_names_and_all_are_accepted(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy), "--select", "JAX301", "--select", "tracer-concretization")
    assert "JAX301" in out and "JAX302" in out and "JAX303" not in out
    _, out, _ = run(capsys, "check", str(buggy), "--select", "ALL", "--ignore", "value-dependent-shape")
    assert "JAX301" in out and "JAX303" not in out
    code, _, err = run(capsys, "check", str(buggy), "--select", "python-branch-on-tracr")
    assert code == 2 and "did you mean 'python-branch-on-tracer'?" in err


def test_extend_select_from_cli_and_config(capsys, tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1  # noqa: JAX201\n")
    assert run(capsys, "check", str(tmp_path), "--no-cache")[0] == 0
    code, out, _ = run(capsys, "check", str(tmp_path), "--no-cache", "--extend-select", "unused-noqa")
    assert code == 1 and "JAX002 [*] unused `noqa` directive (unused: `JAX201`)" in out
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-select = ['JAX002']\n")
    assert "JAX002" in run(capsys, "check", str(tmp_path), "--no-cache")[1]
    code, out, _ = run(capsys, "check", str(tmp_path), "--no-cache", "--fix")
    assert code == 0 and (tmp_path / "a.py").read_text() == "x = 1\n"


def test_diff_with_exit_zero_exits_0(capsys, tmp_path: Path):
    (tmp_path / "a.py").write_text(MUTATION)
    code, out, _ = run(capsys, "check", str(tmp_path / "a.py"), "--diff", "--exit-zero")
    assert code == 0 and "+x = x.at[0].set(1.0)" in out


def test_statistics(capsys, buggy: Path, tmp_path: Path):
    (buggy / "m.py").write_text(MUTATION)
    code, out, _ = run(capsys, "check", str(buggy), "--statistics", "--no-cache")
    assert code == 1
    assert out.splitlines() == ["1\tJAX201\t[*] in-place-array-update", "1\tJAX301\t[ ] python-branch-on-tracer",
                                "1\tJAX302\t[ ] tracer-concretization", "1\tJAX303\t[ ] value-dependent-shape"]
    _, out, _ = run(capsys, "check", str(buggy), "--statistics", "--format", "json", "--no-cache")
    assert json.loads(out)[0] == {"code": "JAX201", "name": "in-place-array-update", "count": 1, "fixable": True}


def test_output_file(capsys, buggy: Path, tmp_path: Path):
    target = tmp_path / "out" / "report.json"
    code, out, _ = run(capsys, "check", str(buggy), "--format", "json", "-o", str(target))
    assert code == 1 and out == "" and len(json.loads(target.read_text())) == 3


def test_quiet_prints_findings_only(capsys, buggy: Path):
    _, out, _ = run(capsys, "check", str(buggy), "-q", "--format", "concise")
    assert len(out.splitlines()) == 3 and "Found" not in out


def test_fix_only_show_fixes_and_exit_non_zero_on_fix(capsys, tmp_path: Path):
    target = tmp_path / "a.py"
    target.write_text(MUTATION + "import jax\n\n@jax.jit\ndef f(v):\n    if v > 0:\n        return v\n    return v\n")
    code, out, _ = run(capsys, "check", str(target), "--fix-only")
    assert (code, out) == (0, "Fixed 1 error.\n") and "x = x.at[0].set(1.0)" in target.read_text()
    target.write_text(MUTATION)
    code, out, _ = run(capsys, "check", str(target), "--fix", "--show-fixes", "--exit-non-zero-on-fix")
    assert code == 1
    assert out == f"Fixed 1 error:\n- {target}:\n    1 \u00d7 JAX201 (in-place-array-update)\n\n" \
                  "Found 1 error (1 fixed, 0 remaining).\n"
    target.write_text(MUTATION)
    assert run(capsys, "check", str(target), "--fix")[0] == 0


def test_add_noqa_is_idempotent_and_merges(capsys, tmp_path: Path):
    target = tmp_path / "a.py"
    target.write_text("import jax.numpy as jnp\r\n\r\nx = jnp.zeros(3)\r\nx[0] = 1.0  # noqa: E501\r\n"
                      "s = '# not a comment'\r\nx[1] = 2.0\r\n")
    code, _, err = run(capsys, "check", str(target), "--add-noqa", "--no-cache")
    assert (code, err) == (0, "Added 2 noqa directives.\n")
    assert target.read_bytes() == (b"import jax.numpy as jnp\r\n\r\nx = jnp.zeros(3)\r\n"
                                   b"x[0] = 1.0  # noqa: E501, JAX201\r\ns = '# not a comment'\r\n"
                                   b"x[1] = 2.0  # noqa: JAX201\r\n")
    assert run(capsys, "check", str(target), "--add-noqa", "--no-cache") == (0, "", "Added 0 noqa directives.\n")
    assert run(capsys, "check", str(target), "--no-cache")[0] == 0


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_stdin_with_stdin_filename(capsys, monkeypatch, tmp_path: Path):
    _stdin(monkeypatch, BUGGY)
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "pkg/model.py", "--format", "concise")
    assert code == 1 and out.startswith("pkg/model.py:6:8: JAX301 ")
    _stdin(monkeypatch, "x = 1\n")
    assert run(capsys, "check", "-") == (0, "All checks passed!\n", "")


def test_fix_on_stdin_writes_the_fixed_source_to_stdout(capsys, monkeypatch):
    _stdin(monkeypatch, MUTATION)
    code, out, err = run(capsys, "check", "-", "--stdin-filename", "a.py", "--fix")
    assert code == 0 and out == MUTATION.replace("x[0] = 1.0", "x = x.at[0].set(1.0)")
    assert err == "Found 1 error (1 fixed, 0 remaining).\n"


def test_unsafe_print_fix_keeps_double_quotes(capsys, tmp_path: Path):
    target = tmp_path / "a.py"
    target.write_text('import jax\n\n@jax.jit\ndef f(v):\n    print("v is", v)\n    return v\n')
    assert run(capsys, "check", str(target), "--fix", "--unsafe-fixes", "--no-cache")[0] == 0
    assert 'jax.debug.print("v is {}", v)' in target.read_text()


def test_bad_config_has_plain_words_and_did_you_mean(capsys, buggy: Path):
    (buggy / "pyproject.toml").write_text("[tool.jaxcheck]\nignore = 'JAX301'\n")
    code, _, err = run(capsys, "check", str(buggy))
    assert code == 2 and "ignore: expected a list, got 'JAX301'" in err and "Input should" not in err
    (buggy / "pyproject.toml").write_text("[tool.jaxcheck]\nextend-selec = ['JAX002']\n")
    assert "did you mean 'extend-select'?" in run(capsys, "check", str(buggy))[2]


@pytest.mark.parametrize("form", ["json-lines", "rdjson", "gitlab", "pylint", "grouped", "full"])
def test_new_formats_run_from_the_cli(capsys, buggy: Path, form: str):
    code, out, _ = run(capsys, "check", str(buggy), "--format", form)
    assert code == 1 and "JAX301" in out



def test_a_reader_that_stops_early_ends_the_run_quietly(monkeypatch, capsys):
    """`jaxcheck config | head -1`: writing to a pipe whose reader has left raises BrokenPipeError; the run
    ends with exit status 2 and no traceback (stdout is pointed at /dev/null, as the Python docs advise)."""
    import os

    from jaxcheck import cli

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has left: every write fails with EPIPE
    stdout = open(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "argv", ["jaxcheck", "config"])
    with pytest.raises(SystemExit) as ended:
        cli.run()
    assert ended.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_run_that_traced_no_function_says_so_once_also_from_the_cache(tmp_path: Path, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text("import mylib\n\n@mylib.compile\ndef step(x):\n    if x > 0:\n"
                                       "        return x\n    return -x\n")
    for _ in range(2):  # the second run is answered from the cache's run record
        code, out, err = run(capsys, "check", str(tmp_path))
        assert code == 0 and out == "All checks passed!\n"
        assert err.count("note: no function was found traced") == 1 and "extra-jit-decorators" in err
    assert "no function was found traced" not in run(capsys, "check", "--format", "json", str(tmp_path))[2]
    (tmp_path / "other.py").write_text("import jax\n\ng = jax.jit(lambda x: x)\n")
    assert "no function was found traced" not in run(capsys, "check", str(tmp_path))[2]
    (tmp_path / "other.py").write_text("import jax\n\ng = jax.jit(\n")  # what does not parse may trace
    assert "no function was found traced" not in run(capsys, "check", str(tmp_path))[2]
    (tmp_path / "other.py").unlink()
    assert "no function was found traced" in run(capsys, "check", "--no-cache", str(tmp_path))[2]


def test_verbose_names_a_jit_wrapper_the_model_cannot_follow_once(tmp_path: Path, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "wrap.py").write_text("import jax\n\ndef decorate(f):\n    return f\n\ndef compile(fn):\n"
                                      "    return jax.jit(decorate(fn))\n")
    (tmp_path / "model.py").write_text("from wrap import compile\n\n@compile\ndef step(x):\n    print(x)\n"
                                       "    return x\n\n@compile\ndef other(x):\n    return x\n")
    code, out, err = run(capsys, "check", "--no-cache", "--verbose", str(tmp_path))
    assert code == 0 and err.count("cannot follow the wrapper `wrap.compile`") == 1
    assert "cannot follow" not in run(capsys, "check", "--no-cache", str(tmp_path))[2]
    run(capsys, "check", str(tmp_path))
    err = run(capsys, "check", "-v", str(tmp_path))[2]  # answered from the run record: it says so instead
    assert "answered from the record of an earlier run" in err and "--no-cache" in err
